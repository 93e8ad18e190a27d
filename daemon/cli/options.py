"""Options several commands share: the vocabulary settings and the help format, defined once.

``anchorstream fit --input`` chooses a vocabulary from files, ``anchorstream ingest`` sets up a
store that chooses its own as documents arrive; both tokenize with a stopword list and weight
documents by ``--length-cap``. The defaults, the argument parsers and the help of these options
live here so that the commands cannot drift apart.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

from anchorstream.errors import InputError
from anchorstream.fsutil import kind_of_directory
from anchorstream.model.anchors import ANCHOR_CANDIDATES, ANCHOR_MIN_DF, ANCHOR_NOISE
from anchorstream.model.background import check_spread
from anchorstream.stats.admission import MIN_SHARE
from anchorstream.stats.cooccurrence import LENGTH_CAP, cap_pairs
from anchorstream.text.duplicates import DEFAULT_MEMORY
from anchorstream.text.tokenize import Tokenizer, available_stopword_lists, load_stopwords
from anchorstream.text.windows import AUTO, check_window

__all__ = ["ADMIT_THRESHOLD", "CAPACITY", "DUPLICATE_MEMORY", "HelpFormatter", "LENGTH_CAP",
           "LINKS_HELP", "MAX_DF", "MIN_DF", "STOPWORDS", "STOPWORDS_HELP", "VOCAB_SIZE",
           "admission_argument", "anchor_arguments", "anchorfree_arguments", "check_input_file", "check_input_files",
           "count_delay_arg", "count_delay_pairs_arg", "duplicate_memory_help", "int_arg",
           "length_cap_arg", "length_cap_help", "max_df_arg", "nonnegative_int_arg",
           "positive_float_arg", "positive_int_arg", "refine_window_argument",
           "resolve_stopwords", "resolve_tokenizing", "spread_arg", "stopwords_tokenizer",
           "warn_json_as_text", "window_arg"]

class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` with each option's default, said once and only where it informs.

    Left out: a help text that already names its default, a default of None (nothing set), and
    on/off flags (``--no-rectify (default: True)`` read as if rectification were off).
    """

    def _get_help_string(self, action):
        text = action.help or ""
        if ("default" in text or action.default in (None, argparse.SUPPRESS)
                or isinstance(action.default, bool) or not action.option_strings):
            return text
        return text + " (default: %(default)s)"


#: Stopword list of ``fit --input`` and ``ingest``: a shipped list name, a file path,
#: ``none``, or ``auto`` (:func:`resolve_stopwords`).
STOPWORDS = "auto"
#: Words in more than this fraction of documents are left out (fit) or blocked (a store).
MAX_DF = 0.5
#: ``fit --input``: vocabulary size cap and minimum document frequency.
VOCAB_SIZE = 5000
MIN_DF = 5
#: Repeated documents: one whose tokens repeat one of the last this many distinct documents
#: is skipped (fit --input, ingest, the daemon's store.duplicate_memory).
DUPLICATE_MEMORY = DEFAULT_MEMORY
#: A store's vocabulary slots and the document frequency that admits a new word.
CAPACITY = 20_000
ADMIT_THRESHOLD = 5.0

STOPWORDS_HELP = (f"stopword list: a shipped list name ({', '.join(available_stopword_lists())}), "
                  "a file path, 'none', or 'auto': english, unless it removes less than 8%% of "
                  "the first documents' words and another shipped list removes 8%% or more (the "
                  "one removing most)")


def check_input_file(path) -> None:
    """Refuse an input ``path`` that is not a file, saying what it is instead (InputError)."""
    p = Path(path)
    if p.is_file():
        return
    if p.is_dir():
        what = kind_of_directory(p) or "a directory"
        raise InputError(f"input file {str(path)!r} is {what}, not a file of documents")
    raise InputError(f"input file {str(path)!r} does not exist")


def check_input_files(paths) -> None:
    """Refuse input files that do not exist or that are listed more than once.

    A file listed twice would be read twice in one run, its documents counted twice (and a
    store keeps one offset per file, so no rerun of ``ingest`` could tell the passes apart).
    It is refused rather than skipped with a warning: the list is most likely a mistake
    (overlapping globs, a link to a file also listed, or a typo for another file) that a
    warning would leave in the resume command, which is this same command line. Identity is
    the file itself (device and inode), so other spellings of its path and links to it count
    as the same file. Each path is checked by :func:`check_input_file` first.

    Raises
    ------
    InputError
        Naming the missing file, or both names of the repeated one.
    """
    seen: dict[tuple[int, int], str] = {}
    for path in paths:
        check_input_file(path)
        st = os.stat(path)
        identity = (st.st_dev, st.st_ino)
        if identity in seen:
            raise InputError(
                f"input files {seen[identity]!r} and {str(path)!r} are the same file: its "
                "documents would be counted twice; list each file once"
            )
        seen[identity] = str(path)


def duplicate_memory_help(note: str) -> str:
    """``--duplicate-memory``'s help, with what differs by command in ``note``."""
    return ("skip a document whose tokens repeat one of the last N distinct documents (a "
            "template, a repost: each copy would count its word pairs again and make a topic "
            f"of one message); 0 counts every copy{note}")


def length_cap_help(note: str) -> str:
    """``--length-cap``'s help, with what differs by command in ``note``."""
    return ("document weighting: every word pair counts the same up to a document of this "
            f"many tokens, a longer one as much as that; 2 = every document the same{note}")


#: :func:`warn_json_as_text` looks at this many lines of the first file.
_FORMAT_PEEK_LINES = 200


def warn_json_as_text(files, *, format: str, text_field: str) -> bool:
    """With ``--format text``, warn on stderr where the first file's lines are JSON objects
    holding ``text_field`` (nine in ten of its first lines): each would be read as plain text,
    keys, ids and all. Returns whether it warned. A missing file is left to the read's error.
    """
    import json
    from itertools import islice

    from daemon.ingest.files import iter_lines

    if format != "text" or not files or not Path(files[0]).is_file():
        return False
    lines = objects = 0
    for _, raw in islice(iter_lines(files[0]), _FORMAT_PEEK_LINES):
        lines += 1
        if raw.lstrip()[:1] == b"{":
            try:
                value = json.loads(raw)
            except ValueError:
                continue
            objects += isinstance(value, dict) and text_field in value
    if not lines or objects * 10 < lines * 9:
        return False
    print(f"warning: {objects} of the first {lines} lines of {str(files[0])!r} are JSON objects "
          f"with a {text_field!r} field, which --format text reads as plain text, keys and "
          f"all; pass --format json to read that field", file=sys.stderr)
    return True


#: ``--stopwords auto`` and ``--links auto`` read at most this many lines, however many of
#: them fail to decode.
_AUTO_MAX_LINES = 20_000


def _first_contents(files, *, format: str, text_field: str, max_bytes: int | None):
    """The decoded contents of the first lines of ``files`` (at most :data:`_AUTO_MAX_LINES`
    lines), what ``auto`` settings choose from. A line that does not decode is skipped here
    (the read counts it); a missing file is left to the read's error."""
    from anchorstream.text.decode import decode
    from daemon.ingest.files import iter_lines

    lines = 0
    for path in files:
        if not Path(path).is_file():
            continue
        for _, raw in iter_lines(path):
            lines += 1
            if lines > _AUTO_MAX_LINES:  # bad lines: not the whole file twice
                return
            try:
                yield decode(raw, format=format, text_field=text_field,
                             max_bytes=max_bytes).content
            except Exception:  # noqa: BLE001 - the read counts and reports bad lines
                continue


def resolve_tokenizing(stopwords: str, links: str, files, *, format: str, text_field: str,
                       max_bytes: int | None) -> tuple[str, str]:
    """``--stopwords`` and ``--links`` for ``files``, each as given or, where ``auto``, chosen
    from the first documents, both from one read of them (:func:`_first_contents`).

    ``--stopwords auto``: the shipped list the first documents' words choose
    (:func:`~anchorstream.text.language.choose_stopwords`: ``english`` unless it misfits them
    and another fits), noted on stderr where that is not ``english``. ``--links auto``:
    ``drop`` where the first documents are posts full of links, ``keep`` elsewhere
    (:func:`~anchorstream.text.links.choose_links`), noted on stderr where it drops them."""
    if "auto" not in (stopwords, links):
        return stopwords, links
    import itertools
    from contextlib import closing

    from anchorstream.text.language import choose_stopwords
    from anchorstream.text.links import choose_links

    with closing(_first_contents(files, format=format, text_field=text_field,
                                 max_bytes=max_bytes)) as first:
        for_links, rest = (itertools.tee(first) if stopwords == links == "auto"
                           else (first, first))
        if links == "auto":
            links, link_check = choose_links(for_links)
            if links == "drop":
                print(f"note: --links auto chose drop: {link_check.share:.0%} of the first "
                      f"{link_check.docs} documents hold a link, whose pieces (http, www, com, "
                      "a link shortener's) would fill the topics; --links keep counts them as "
                      "words", file=sys.stderr)
        del for_links  # the stopwords' read goes on: tee need not keep its documents for it
        if stopwords == "auto":
            stopwords, check = choose_stopwords(rest)
            if stopwords != "english":
                shares = check.shares()
                print(f"note: --stopwords auto chose {stopwords!r}: it removes "
                      f"{shares[stopwords]:.1%} of the {check.words} words of the first "
                      f"{check.docs} documents, the English list {shares['english']:.1%} "
                      "(--stopwords english keeps it)", file=sys.stderr)
    return stopwords, links


def resolve_stopwords(name: str, files, *, format: str, text_field: str,
                      max_bytes: int | None) -> str:
    """The stopword list ``--stopwords NAME`` names for ``files`` (:func:`resolve_tokenizing`)."""
    return resolve_tokenizing(name, "keep", files, format=format, text_field=text_field,
                              max_bytes=max_bytes)[0]


def stopwords_tokenizer(name: str, links: str = "keep") -> Tokenizer:
    """The tokenizer of ``--stopwords NAME`` (``none``: no stopwords) and ``--links``."""
    return Tokenizer(stopwords=None if name == "none" else load_stopwords(name), links=links)


#: ``--links`` (fit --input, ingest): what ``vocab.links`` is in the daemon, and ``auto``.
LINKS_HELP = ("drop = remove links (a scheme and ://, or www., to the next space) before the "
              "text is split, for posts whose links would fill the topics with http, www, com "
              "and a shortener's fragments; keep = they are words; auto = drop where at least "
              "half of the first 1000 documents hold a link, keep elsewhere")


def length_cap_arg(text: str) -> float | None:
    """``--length-cap``: a number >= 2, or ``none`` (every word pair the same)."""
    if text.strip().lower() == "none":
        return None
    try:
        value = float(text)
        cap_pairs(value)
    except (ValueError, InputError):
        raise argparse.ArgumentTypeError(
            f"expected a number of tokens >= 2 or 'none', got {text!r}") from None
    return value


def int_arg(low: int):
    """An argparse ``type``: an integer >= ``low``, refused naming the flag (argparse adds it)
    rather than by the library's parameter name, which may differ (``--refine-iters``,
    ``refine_max_iter``)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}")
        return value

    parse.__name__ = f"integer >= {low}"
    return parse


def positive_float_arg(text: str) -> float:
    """A finite number > 0 (``ingest --admit-threshold``, ``--half-life``, ``--window``)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


#: An integer >= 1 (``--max-bytes``, ``--max-tokens``, counts and sizes).
positive_int_arg = int_arg(1)
#: An integer >= 0 (``--seed``: numpy's generators take no negative seed; 0 = off elsewhere).
nonnegative_int_arg = int_arg(0)


def count_delay_arg(text: str) -> int | str:
    """``--count-delay``: a whole number of documents >= 0, or ``auto`` (the store's kind
    decides: :func:`anchorstream.store.delay.resolve_count_delay`)."""
    # Imported here: anchorstream.store imports zarr (0.25 s), which `fit --input` never uses.
    from anchorstream.store.delay import AUTO as COUNT_DELAY_AUTO

    if text.strip().lower() == COUNT_DELAY_AUTO:
        return COUNT_DELAY_AUTO
    return nonnegative_int_arg(text)


def count_delay_pairs_arg(text: str) -> int | None:
    """``--count-delay-pairs``: a whole number of word pairs >= 1, or ``none`` (no bound)."""
    if text.strip().lower() == "none":
        return None
    return positive_int_arg(text)


def max_df_arg(text: str) -> float | None:
    """``--max-df`` of a store: a fraction in (0, 1], or ``none``."""
    if text.strip().lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1] or 'none', got {text!r}")
    return value


def spread_arg(text: str) -> float | None:
    """``--background-spread``: a fraction in (0, 1], or ``none``."""
    if text.strip().lower() == "none":
        return None
    try:
        return check_spread(float(text))
    except (ValueError, InputError):
        raise argparse.ArgumentTypeError(
            f"expected a fraction of the topics in (0, 1] or 'none', got {text!r}") from None


def refine_window_argument(parser, help: str) -> None:
    """``--refine-window TOKENS|auto|none`` (:func:`window_arg`), absent from the namespace
    unless given."""
    parser.add_argument("--refine-window", type=window_arg, default=argparse.SUPPRESS,
                        metavar="TOKENS", help=help)


def window_arg(text: str) -> int | str | None:
    """``--refine-window``: a whole number of tokens >= 2, ``auto`` (decided by the documents'
    length and the number of topics) or ``none`` (whole documents)."""
    word = text.strip().lower()
    if word == "none":
        return None
    if word == AUTO:
        return AUTO
    try:
        return check_window(int(text))
    except (ValueError, InputError):
        raise argparse.ArgumentTypeError(
            f"expected a whole number of tokens >= 2, 'auto' or 'none', got {text!r}") from None


def share_arg(text: str) -> float:
    """``--admission-min-share``: a share in (0, 1], or ``none`` (= 1, no correction)."""
    if text.strip().lower() == "none":
        return 1.0
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(
            f"expected a share in (0, 1] or 'none', got {text!r}") from None
    return value


def admission_argument(p) -> None:
    """``--admission-min-share`` (``fit --store``; the daemon's ``vocab.admission_min_share``)."""
    # Default None (not given), so that --input can refuse it; --store reads MIN_SHARE then.
    p.add_argument("--admission-min-share", type=share_arg, default=None, metavar="SHARE",
                   help=f"--store: correct the counts of words the store admitted late (a "
                        f"pair's counts divided by the share of its later word's documents "
                        f"counted since its admission, at least SHARE; default {MIN_SHARE:g}); "
                        f"1 or 'none' = no correction; a store written with every word from "
                        f"the start (ingest --vocabulary first-pass) is unchanged either way")


def anchor_arguments(p) -> None:
    """``--anchor-*`` (``fit``): the anchor search's candidates and their noise."""
    p.add_argument("--anchor-min-df", type=int, default=ANCHOR_MIN_DF,
                   help="only words in at least this many documents may be anchors (fewer "
                        "where fewer than 2 x topics words are that frequent, and down to 5%% "
                        "of the documents where long documents estimate a row from fewer)")
    p.add_argument("--anchor-candidates", type=int, default=ANCHOR_CANDIDATES, metavar="N",
                   help="anchors qr/fast: at most N x topics candidates, the most frequent "
                        "words (anchor_min_df is raised where more reach it); 0 = no cap")
    p.add_argument("--anchor-noise", type=float, default=ANCHOR_NOISE, metavar="X",
                   help="anchors qr/fast: take X times each word's estimated sampling noise "
                        "(1 / (documents x (mean length - 1))) off its distance to the span "
                        "when choosing anchors; 0 = the plain farthest word")


def anchorfree_arguments(p, settings) -> None:
    """``--anchorfree-*`` (``fit``): method anchorfree's linear programs, defaults from
    ``settings`` (``ModelSettings``)."""
    p.add_argument("--anchorfree-words", type=int, default=settings.anchorfree_words,
                   metavar="N", help="method anchorfree: the N x topics most frequent words "
                   "constrain the linear programs; 0 = every word")
    p.add_argument("--anchorfree-slack", type=float, default=settings.anchorfree_slack,
                   metavar="C", help="method anchorfree: allow C(v,k) >= -C sigma_v, sigma_v "
                   "the sampling noise of word v's row (first order); 0 = the paper's C >= 0")
