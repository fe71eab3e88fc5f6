"""Analyser shared by indexing and querying: the same text must always give the same tokens.

Latin text follows Lucene's English analyser (possessive strip, lowercase, stopwords, Snowball
stemmer); runs of CJK characters are segmented into words with rjieba, and each character is a term
too, so a word finds its sub-words and split forms (`喝茶` finds `喝了茶`, `喝龙井茶`); numbers are kept.
The fingerprint names the on-disk index so a changed analyser never reuses a stale index.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import Stemmer

# Bump when tokenization changes in a way the settings do not capture.
TOKENIZER_VERSION = 3

DEFAULT_TOKENIZER_SETTINGS: dict[str, Any] = {
    "stemmer": "english",  # a PyStemmer algorithm name, or None to keep words as they are
    "stopwords": True,  # drop English and Chinese stopwords
    "cjk_mode": "search",  # "search": words plus their sub-words (jieba cut_for_search); "words": plain cut
    "min_cjk_len": 1,  # CJK tokens shorter than this are dropped
    "cjk_chars": True,  # every CJK character is a term too (besides the words), so sub-words match
}

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
_CJK_RE = re.compile(f"[{_CJK}]")
_CJK_SPLIT_RE = re.compile(f"([{_CJK}]+)")  # the capturing group keeps the CJK runs at odd indices
# A decimal number (3.11 stays one term, as in Lucene), or a word of letters/digits joined by inner
# apostrophes; a trailing possessive 's is matched but not kept.
_WORD_RE = re.compile(r"(\d+(?:\.\d+)+|[^\W_]+(?:'(?!s\b)[^\W_]+)*)(?:'s\b)?")
_STEM_CACHE_SIZE = 500_000
# Full-width digits and Latin letters (common in Chinese text) fold to ASCII: ２０２４ == 2024.
_FULLWIDTH_ALNUM_RE = re.compile("[\uff10-\uff19\uff21-\uff3a\uff41-\uff5a]")
_FULLWIDTH_TO_ASCII = {code: code - 0xFEE0 for code in range(0xFF10, 0xFF5B)}

# NLTK's English list (minus "now"), "could"/"would", and the contractions a chat is full of.
_ENGLISH_STOPWORDS_TEXT = """
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not of off on once only or other our ours ourselves out over own same she should so
some such than that the their theirs them themselves then there these they this those through to too
under until up very was we were what when where which while who whom why will with would you your
yours yourself yourselves
i'm i've i'll i'd you're you've you'll you'd he'd he'll she'd she'll it'll we're we've we'll we'd
they're they've they'll they'd that'll let's don't doesn't didn't isn't aren't wasn't weren't
haven't hasn't hadn't won't wouldn't can't couldn't shouldn't mustn't needn't
"""
ENGLISH_STOPWORDS = frozenset(_ENGLISH_STOPWORDS_TEXT.split())

# Function words, particles and question words that carry no topic.
_CHINESE_STOPWORDS_TEXT = """
的 地 得 了 着 过 吗 呢 吧 啊 呀 哦 嗯 么 是 在 和 与 及 或 而 也 都 就 又 还 被 把 让 给 对 从 向 于 之 其 这 那
这个 那个 这些 那些 这样 那样 什么 哪 哪个 哪些 哪里 怎么 怎样 如何 为什么 谁 多少 几 个 一个 等 等等 以 所
为 并 但 但是 而且 因为 所以 如果 虽然 然后 即 即使 已 已经 将 会 能 可以 要
"""
CHINESE_STOPWORDS = frozenset(_CHINESE_STOPWORDS_TEXT.split())


def _check_settings(settings: dict[str, Any]) -> None:
    """Reject settings that would fail later or silently mean something else."""
    stemmer = settings["stemmer"]
    if stemmer is not None and stemmer not in Stemmer.algorithms():
        raise ValueError(f"stemmer must be null or one of {Stemmer.algorithms()}, not {stemmer!r}")
    if not isinstance(settings["stopwords"], bool):
        raise ValueError("stopwords must be true or false")
    if settings["cjk_mode"] not in ("search", "words"):
        raise ValueError("cjk_mode must be 'search' or 'words'")
    if not isinstance(settings["cjk_chars"], bool):
        raise ValueError("cjk_chars must be true or false")
    min_cjk_len = settings["min_cjk_len"]
    if not isinstance(min_cjk_len, int) or isinstance(min_cjk_len, bool) or min_cjk_len < 1:
        raise ValueError("min_cjk_len must be a positive integer")


class Tokenizer:
    """Turns text into index terms; construct once and reuse (it caches stems)."""

    def __init__(self, **settings: Any) -> None:
        unknown = set(settings) - set(DEFAULT_TOKENIZER_SETTINGS)
        if unknown:
            raise ValueError(f"unknown tokenizer settings: {sorted(unknown)}")
        self.settings = {**DEFAULT_TOKENIZER_SETTINGS, **settings}
        _check_settings(self.settings)
        stemmer_name = self.settings["stemmer"]
        self._stemmer = Stemmer.Stemmer(stemmer_name) if stemmer_name else None
        use_stopwords = self.settings["stopwords"]
        self._english_stop = ENGLISH_STOPWORDS if use_stopwords else frozenset()
        self._chinese_stop = CHINESE_STOPWORDS if use_stopwords else frozenset()
        self._cut: Any = None  # rjieba's segmenter, loaded with its dictionary (~0.2 s) on first CJK text
        self._min_cjk_len = self.settings["min_cjk_len"]
        self._stem_cache: dict[str, str] = {}
        self.fingerprint = self._compute_fingerprint()

    def _compute_fingerprint(self) -> str:
        payload = {
            "version": TOKENIZER_VERSION,
            "settings": self.settings,
            "english_stopwords": sorted(self._english_stop),
            "chinese_stopwords": sorted(self._chinese_stop),
        }
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()[:12]

    def tokenize(self, text: str) -> list[str]:
        """Index terms of ``text`` in reading order (duplicates kept, as BM25 needs term counts)."""
        text = text.lower()
        if "\u2019" in text:
            text = text.replace("\u2019", "'")
        if _FULLWIDTH_ALNUM_RE.search(text):
            text = text.translate(_FULLWIDTH_TO_ASCII).lower()
        if not _CJK_RE.search(text):
            return self._latin_words(text)
        tokens: list[str] = []
        for index, part in enumerate(_CJK_SPLIT_RE.split(text)):
            if index % 2:
                tokens.extend(self._cjk_words(part))
            elif part:
                tokens.extend(self._latin_words(part))
        return tokens

    def _latin_words(self, text: str) -> list[str]:
        stop = self._english_stop
        cached = self._stem_cache.get
        stem = self._stem
        return [cached(word) or stem(word) for word in _WORD_RE.findall(text) if word not in stop]

    def _stem(self, word: str) -> str:
        cached = self._stem_cache.get(word)
        if cached is None:
            if len(self._stem_cache) >= _STEM_CACHE_SIZE:
                self._stem_cache.clear()
            cached = self._stemmer.stemWord(word) if self._stemmer is not None else word
            self._stem_cache[word] = cached
        return cached

    def _cjk_words(self, run: str) -> list[str]:
        stop = self._chinese_stop
        min_len = self._min_cjk_len
        if self._cut is None:
            import rjieba

            self._cut = rjieba.cut_for_search if self.settings["cjk_mode"] == "search" else rjieba.cut
        words = self._cut(run)
        if self.settings["cjk_chars"]:  # each character once per occurrence, whatever words cover it
            words = [w for w in words if len(w) > 1] + list(run)
        return [w for w in words if len(w) >= min_len and w not in stop]
