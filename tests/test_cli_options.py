"""Options the CLI commands share (``daemon/cli/options.py``): ``--stopwords auto``, integers."""

from __future__ import annotations

import argparse
import gzip
import json

import pytest

from daemon.cli import options
from daemon.cli.options import resolve_stopwords

GERMAN = "der Hund und die Katze sind nicht im Haus und der Garten ist hinter dem Haus"
ENGLISH = "the dog and the cat are not in the house and the garden is behind the house"


def _write(path, lines):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as fh:
        fh.writelines(line + "\n" for line in lines)
    return path


@pytest.mark.parametrize("name", ["docs.jsonl", "docs.jsonl.gz"])
def test_auto_reads_the_first_documents_of_the_files(tmp_path, capsys, name):
    german = _write(tmp_path / name, [json.dumps({"text": GERMAN})] * 100)
    assert resolve_stopwords("auto", [german], format="json", text_field="text",
                             max_bytes=None) == "german"
    assert "--stopwords auto chose 'german'" in capsys.readouterr().err
    english = _write(tmp_path / "en.txt", [ENGLISH] * 100)
    assert resolve_stopwords("auto", [english], format="text", text_field="text",
                             max_bytes=None) == "english"
    assert capsys.readouterr().err == ""
    # A named list is taken as it is, and nothing is read.
    assert resolve_stopwords("french", [tmp_path / "missing.jsonl"], format="json",
                             text_field="text", max_bytes=None) == "french"


def test_auto_skips_bad_lines_and_missing_files_but_reads_a_bounded_number(tmp_path,
                                                                          monkeypatch):
    good = [json.dumps({"text": GERMAN})] * 100
    path = _write(tmp_path / "docs.jsonl", ["not json", json.dumps({"other": 1})] * 50 + good)
    assert resolve_stopwords("auto", [tmp_path / "missing.jsonl", path], format="json",
                             text_field="text", max_bytes=None) == "german"
    # Past the bound of lines read, the bad lines decide nothing: English stays.
    monkeypatch.setattr(options, "_AUTO_MAX_LINES", 100)
    assert resolve_stopwords("auto", [path], format="json", text_field="text",
                             max_bytes=None) == "english"


def test_links_auto_drops_the_links_of_posts_full_of_them_and_says_so(tmp_path, capsys):
    posts = [json.dumps({"text": f"flu shots now {i} http://ow.ly/x{i}"}) for i in range(120)]
    plain = [json.dumps({"text": f"flu shots now {i}"}) for i in range(120)]
    # Half of the first documents or more: drop, noted; fewer: keep, silently.
    mixed = _write(tmp_path / "mixed.jsonl", posts + plain)
    some = _write(tmp_path / "some.jsonl", posts[:100] + plain[:120])
    kw = dict(format="json", text_field="text", max_bytes=None)

    def links(name, files):
        return options.resolve_tokenizing("none", name, files, **kw)[1]

    assert links("auto", [tmp_path / "missing.jsonl", mixed]) == "drop"
    assert "--links auto chose drop: 50% of the first 240 documents" in capsys.readouterr().err
    assert links("auto", [some]) == "keep"
    assert capsys.readouterr().err == ""
    # Too few documents to tell: keep. A named setting is taken as it is; nothing is read.
    few = _write(tmp_path / "few.jsonl", posts[:99])
    assert links("auto", [few]) == "keep"
    assert links("keep", [mixed]) == "keep"
    assert links("drop", [tmp_path / "missing.jsonl"]) == "drop"


def test_one_read_chooses_both_the_stopwords_and_the_links(tmp_path, capsys):
    # German posts full of links: both choices from the same first documents, in one pass
    # (the links' 1,000 documents replayed to the stopwords' check).
    path = _write(tmp_path / "posts.jsonl",
                  [json.dumps({"text": f"{GERMAN} http://ow.ly/x{i}"}) for i in range(1500)])
    assert options.resolve_tokenizing("auto", "auto", [path], format="json", text_field="text",
                                      max_bytes=None) == ("german", "drop")
    err = capsys.readouterr().err
    assert "--links auto chose drop: 100% of the first 1000" in err and "chose 'german'" in err
    assert options.resolve_tokenizing("english", "keep", [tmp_path / "missing"], format="json",
                                      text_field="text", max_bytes=None) == ("english", "keep")


def test_integer_arguments_name_their_bound():
    # --seed -1 was a traceback from numpy's SeedSequence.
    seed_arg, positive_int_arg = options.nonnegative_int_arg, options.positive_int_arg
    assert seed_arg("0") == 0 and seed_arg("12") == 12 and positive_int_arg("1") == 1
    for parse, bad, bound in ((seed_arg, "-1", 0), (seed_arg, "x", 0),
                              (positive_int_arg, "0", 1), (positive_int_arg, "1.5", 1)):
        with pytest.raises(argparse.ArgumentTypeError,
                           match=rf"expected an integer >= {bound}, got '{bad}'"):
            parse(bad)


def test_json_lines_read_as_text_are_warned_of(tmp_path, capsys):
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": i, "text": ENGLISH}) + "\n" for i in range(50)))
    plain = tmp_path / "plain.txt"
    plain.write_text(f"{ENGLISH}\n" * 50)
    assert options.warn_json_as_text([docs], format="text", text_field="text")
    err = capsys.readouterr().err
    assert "50 of the first 50 lines" in err and "pass --format json" in err
    # The right format, plain text, another field, or no file: nothing to say.
    assert not options.warn_json_as_text([docs], format="json", text_field="text")
    assert not options.warn_json_as_text([plain], format="text", text_field="text")
    assert not options.warn_json_as_text([docs], format="text", text_field="body")
    assert not options.warn_json_as_text([tmp_path / "missing"], format="text",
                                         text_field="text")
    assert capsys.readouterr().err == ""
