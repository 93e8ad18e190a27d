"""Links: what ``--links drop`` removes, and the note that posts full of them get."""

from __future__ import annotations

from anchorstream.text.links import LINK_POSTS_SHARE, LinkCheck, choose_links, drop_links


def test_drop_links_replaces_each_link_by_a_space():
    assert drop_links("a http://ow.ly/x b HTTPS://X.Y c www.z.org d") == "a   b   c   d"
    assert drop_links("awww.. no link, mail me@example.org") == "awww.. no link, mail me@example.org"


def test_drop_links_takes_what_a_retweet_left_of_a_link_and_leaves_http_as_a_word():
    # As the health-news tweets hold them: cut short by an ellipsis, or a bare scheme.
    for cut in ("http:/…", "http:…", "http…", "https:/…", "http:// ...", "http: ...",
                "http ...", "http://", "HTTP:"):
        assert drop_links(f"flu shot {cut}") == "flu shot  ", cut
    assert drop_links("a https:// b") == "a   b"
    # The protocol's name in prose stays a word, before a colon too.
    for prose in ("an HTTP server", "supports http", "HTTP: GET and POST", "https proxies"):
        assert drop_links(prose) == prose


def test_the_check_notes_posts_full_of_links_once_it_has_seen_enough():
    check = LinkCheck(n_docs=200)
    for i in range(200):
        assert not check.done
        check.observe(f"post {i} http://ow.ly/{i}" if i % 4 else f"post {i} no link")
    assert check.done and check.share == 0.75 and check.share >= LINK_POSTS_SHARE
    assert "--links drop" in check.note() and "75% of the first 200 documents" in check.note()
    check.observe("http://more.org")  # done: no longer counted
    assert check.docs == 200


def test_the_check_is_quiet_below_half_on_few_documents_or_when_links_are_dropped():
    few, some = LinkCheck(n_docs=50), LinkCheck(n_docs=200)
    for i in range(200):
        few.observe("http://ow.ly/x")
        some.observe("see http://x.org" if i % 3 == 0 else "no link")
    assert few.share == 1.0 and few.note() is None  # 50 documents say too little
    assert some.share < LINK_POSTS_SHARE and some.note() is None
    words = LinkCheck(n_docs=1)
    words.observe(["pre", "tokenized", "http://x.org"])  # words, not text: no link to split
    assert words.share == 0.0
    dropping = LinkCheck("drop")
    assert dropping.done and dropping.share is None and dropping.note() is None


def test_auto_drops_links_where_the_check_calls_the_documents_posts():
    posts = ["flu http://ow.ly/x"] * 500 + ["no link"] * 500
    chosen, check = choose_links(iter(posts + ["http://more.org"] * 1000))
    assert chosen == "drop" and check.posts and check.docs == 1000 and check.share == 0.5
    chosen, check = choose_links(["flu http://ow.ly/x"] * 499 + ["no link"] * 501)
    assert chosen == "keep" and not check.posts and check.note() is None
    assert choose_links(["http://ow.ly/x"] * 99)[0] == "keep"  # 99 documents say too little
    assert choose_links([["pre", "tokenized"]] * 200)[0] == "keep"
