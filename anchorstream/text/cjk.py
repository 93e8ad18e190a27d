"""Words of Chinese and Japanese text: Han characters in overlapping pairs, kana runs whole.

Chinese and Japanese are written without spaces, so the tokenizer's runs of letters
(:mod:`anchorstream.text.tokenize`) are whole clauses there: ``古代战争实时策略游戏`` would be
one "word" seen in one document, and a corpus of such text has no vocabulary to fit. Without a
dictionary the standard way to cut such text into terms is by overlapping character bigrams
(Lucene's ``CJKBigramFilter``, Elasticsearch's ``cjk`` analyzer; Kwok 1997 and Luk & Kwok 2002
on Chinese retrieval): most Chinese words are two characters long, and a word of three or four
is covered by its bigrams, which co-occur in the documents that hold it, which is what the
co-occurrence counts see.

A run of letters is first cut where its script changes, by the character types Japanese
segmenters start from (Han, hiragana, katakana, other):

* a run of **Han** characters (CJK ideographs, ``々``, ``〇``) becomes its overlapping bigrams
  (``实时策略`` → ``实时``, ``时策``, ``策略``); a single Han character stays one token, which
  the tokenizer's default ``min_length`` of 2 then drops, as it drops one-letter words;
* a run of **katakana** (with ``ー``) is one word: loanwords and names such as ``リアルタイム``;
* a run of **hiragana** is one word (particles and inflections such as ``の``, ``します``
  mostly, which the length filter and the vocabulary's ``max_df`` then treat as any frequent
  word);
* anything else (Latin letters, digits, Hangul, whose words Korean separates by spaces) is left
  as it was: ``3d图像`` → ``3d``, ``图像``.

Text without a Han or kana character is never changed, and pre-tokenized documents are not
split at all (the caller's own segmenter, e.g. a dictionary one, decides).
"""

from __future__ import annotations

import re

__all__ = ["has_cjk", "split_cjk"]

_HAN = ("\u3005\u3007\u303b\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
        "\U00020000-\U0002fa1f\U00030000-\U0003134f")
_HIRAGANA = "\u3041-\u309f"
_KATAKANA = "\u30a0-\u30ff\u31f0-\u31ff"
_CJK = re.compile(f"[{_HAN}{_HIRAGANA}{_KATAKANA}]")
# One match per run of one script: group 1 Han, every other run whole.
_RUN = re.compile(f"([{_HAN}]+)|[{_HIRAGANA}]+|[{_KATAKANA}]+|[^{_HAN}{_HIRAGANA}{_KATAKANA}]+")


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a Han, hiragana or katakana character.

    >>> has_cjk("real-time 策略"), has_cjk("한국어 café")
    (True, False)
    """
    return _CJK.search(text) is not None


def _split(word: str) -> list[str]:
    out: list[str] = []
    for m in _RUN.finditer(word):
        run = m.group(0)
        if m.group(1) is not None and len(run) > 1:
            out.extend(run[i:i + 2] for i in range(len(run) - 1))
        else:
            out.append(run)
    return out


def split_cjk(words: list[str]) -> list[str]:
    """``words`` (runs of letters, in order) with every run that holds a Han or kana
    character cut by script, and its Han parts into overlapping bigrams; the others as they
    were.

    >>> split_cjk(["古代战争实时策略游戏"])
    ['古代', '代战', '战争', '争实', '实时', '时策', '策略', '略游', '游戏']
    >>> split_cjk(["古代戦争のリアルタイム戦略ゲーム", "3d图像", "api"])
    ['古代', '代戦', '戦争', 'の', 'リアルタイム', '戦略', 'ゲーム', '3d', '图像', 'api']
    """
    out: list[str] = []
    for word in words:
        if _CJK.search(word) is None:
            out.append(word)
        else:
            out.extend(_split(word))
    return out
