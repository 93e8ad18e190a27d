"""Chinese and Japanese text: Han bigrams, kana runs whole (anchorstream.text.cjk)."""

from __future__ import annotations

import doctest
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import anchorstream.text.cjk as cjk_mod
import anchorstream.text.tokenize as text_mod
from anchorstream.text.tokenize import Tokenizer

PLAIN = Tokenizer(stopwords=None, min_length=1, max_length=50, drop_numbers=False)


def test_module_doctests():
    result = doctest.testmod(cjk_mod)
    assert result.failed == 0 and result.attempted > 0


# The slow twin: each character classified by its code point, runs grouped one by one.
_HAN_RANGES = ((0x3005, 0x3005), (0x3007, 0x3007), (0x303B, 0x303B), (0x3400, 0x4DBF),
               (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2FA1F), (0x30000, 0x3134F))
_HIRAGANA_RANGES = ((0x3041, 0x309F),)
_KATAKANA_RANGES = ((0x30A0, 0x30FF), (0x31F0, 0x31FF))


def _script(char: str) -> str:
    cp = ord(char)
    for name, ranges in (("han", _HAN_RANGES), ("hiragana", _HIRAGANA_RANGES),
                         ("katakana", _KATAKANA_RANGES)):
        if any(a <= cp <= b for a, b in ranges):
            return name
    return "other"


def reference_split(word: str) -> list[str]:
    out = []
    for script, group in itertools.groupby(word, key=_script):
        run = "".join(group)
        if script == "han" and len(run) > 1:
            out.extend(run[i] + run[i + 1] for i in range(len(run) - 1))
        else:
            out.append(run)
    return out


def reference_words(doc: str) -> list[str]:
    """The full pattern's words of the normalised text, each cut by the slow twin when it
    holds a Han or kana character."""
    text = text_mod._normalize(doc, True).replace("_", " ")
    words = text_mod._word_pattern().findall(text)
    out = []
    for w in words:
        out.extend(reference_split(w) if any(_script(c) != "other" for c in w) else [w])
    return out


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        # Chinese: every Han run into its overlapping bigrams; Latin words as before.
        ("古代战争实时策略游戏", ["古代", "代战", "战争", "争实", "实时", "时策", "策略", "略游",
                                 "游戏"]),
        ("0 A.D. 是一个自由、开源的游戏", ["0", "a", "d", "是一", "一个", "个自", "自由", "开源",
                                          "源的", "的游", "游戏"]),
        ("3D图像和Python库", ["3d", "图像", "像和", "python", "库"]),
        # Japanese: Han bigrams, katakana and hiragana runs whole.
        ("古代戦争のリアルタイム戦略ゲーム", ["古代", "代戦", "戦争", "の", "リアルタイム", "戦略",
                                            "ゲーム"]),
        ("東京 タワー", ["東京", "タワー"]),
        ("人々と時々", ["人々", "と", "時々"]),  # the iteration mark is Han
        ("ｶﾀｶﾅ", ["カタカナ"]),  # half-width katakana: NFKC to full width, one word
        # Korean separates its words by spaces: left whole, as any other script.
        ("한국어 텍스트", ["한국어", "텍스트"]),
        ("Straße café", ["strasse", "café"]),
    ],
)
def test_chinese_and_japanese_are_cut_into_terms(doc, expected):
    assert PLAIN(doc) == expected


def test_a_single_han_character_is_dropped_by_the_default_length_filter():
    # As a one-letter word is: 的 and 库 stand alone between punctuation.
    assert Tokenizer()("的，库。自由软件") == ["自由", "由软", "软件"]
    assert Tokenizer(min_length=1)("的，库") == ["的", "库"]


def test_text_without_han_or_kana_is_not_changed():
    doc = "Ελληνικά, русский, हिन्दी, 한국어 and English"
    assert not cjk_mod.has_cjk(text_mod._normalize(doc, True))
    assert PLAIN(doc) == text_mod._word_pattern().findall(text_mod._normalize(doc, True))


def test_pretokenized_documents_are_not_cut():
    # A caller's own segmenter (a dictionary one, say) decides the words.
    assert PLAIN(["实时策略", "游戏"]) == ["实时策略", "游戏"]


#: Text weighted toward the scripts and their boundaries: Han, kana, the iteration and
#: prolonged sound marks, half-width katakana, Latin letters, digits and separators.
_CJK_TEXT = st.text(
    alphabet=st.one_of(st.sampled_from("古代战争游戏東京人々〇のはがしますリアルタイムーｶﾀa1 ，。、_"),
                       st.characters(min_codepoint=0x3000, max_codepoint=0x9FFF),
                       st.characters(blacklist_categories=("Cs",))),
    max_size=40,
)


@settings(max_examples=500, deadline=None)
@given(_CJK_TEXT)
def test_the_tokenizer_cuts_like_its_slow_twin(doc):
    assert PLAIN(doc) == reference_words(doc)


@settings(max_examples=300, deadline=None)
@given(_CJK_TEXT)
def test_the_pieces_of_a_word_spell_it_again(doc):
    # Whole runs joined, and a Han run's bigrams overlapping by one character: the word back.
    for word in text_mod._word_pattern().findall(text_mod._normalize(doc, True)):
        pieces = cjk_mod.split_cjk([word])
        spelled, previous_han = "", False
        for piece in pieces:
            han = len(piece) == 2 and all(_script(c) == "han" for c in piece)
            if han and previous_han and spelled.endswith(piece[0]):
                spelled += piece[1]
            else:
                spelled += piece
            previous_han = han
        assert spelled == word
