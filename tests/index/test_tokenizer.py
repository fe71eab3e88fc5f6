"""Tokenizer: English analysis, Chinese word segmentation, stopwords, numbers, fingerprint."""

from __future__ import annotations

import pytest

from reme.index.tokenizer import DEFAULT_TOKENIZER_SETTINGS, Tokenizer


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer()


def test_english_is_lowercased_stemmed_and_stopped(tokenizer: Tokenizer) -> None:
    tokens = tokenizer.tokenize("The Painters were PAINTING the Lakes")
    assert tokens == ["painter", "paint", "lake"]


def test_possessive_is_stripped_and_curly_apostrophes_normalised(tokenizer: Tokenizer) -> None:
    assert (
        tokenizer.tokenize("Caroline's dog")
        == tokenizer.tokenize("Caroline\u2019s dog")
        == ["carolin", "dog"]
    )
    assert tokenizer.tokenize("I don\u2019t know") == tokenizer.tokenize("I don't know") == ["know"]


def test_numbers_are_kept_and_decimals_stay_whole(tokenizer: Tokenizer) -> None:
    tokens = tokenizer.tokenize("In 2023 she ran 5 km, version 3.11 on 2023-05-08.")
    assert tokens == ["2023", "ran", "5", "km", "version", "3.11", "2023", "05", "08"]


def test_full_width_letters_and_digits_fold_to_ascii(tokenizer: Tokenizer) -> None:
    assert tokenizer.tokenize("２０２４年用ＧＰＴ４") == tokenizer.tokenize("2024年用GPT4")
    assert "gpt4" in tokenizer.tokenize("ＧＰＴ４")


def test_chinese_is_segmented_into_words_not_characters(tokenizer: Tokenizer) -> None:
    tokens = tokenizer.tokenize("我们去了北京天安门广场")
    assert "北京" in tokens and "广场" in tokens
    assert "了" not in tokens  # a Chinese stopword
    assert any(len(token) > 1 for token in tokens)


def test_words_mode_gives_plain_segmentation() -> None:
    words = Tokenizer(cjk_mode="words", cjk_chars=False).tokenize("中华人民共和国成立")
    search = Tokenizer(cjk_mode="search", cjk_chars=False).tokenize("中华人民共和国成立")
    assert words == ["中华人民共和国", "成立"]
    assert set(words) < set(search) and "人民" in search


@pytest.mark.parametrize(
    ("query", "text"),
    [
        ("喝茶", "昨天下午喝了茶"),  # a word split by a particle
        ("喝茶", "我们喝龙井茶"),  # a word whose parts sit in other words
        ("电车", "电动汽车的电池"),
        ("茶", "龙井茶很香"),  # a character inside a longer word
    ],
)
def test_a_chinese_word_shares_terms_with_its_split_forms(
    tokenizer: Tokenizer, query: str, text: str
) -> None:
    assert set(tokenizer.tokenize(query)) & set(tokenizer.tokenize(text))


def test_each_chinese_character_counts_once_per_occurrence(tokenizer: Tokenizer) -> None:
    tokens = tokenizer.tokenize("中华人民共和国")
    assert tokens.count("中") == 1 and tokens.count("人") == 1 and "中华人民共和国" in tokens
    assert "和" not in tokens  # stopwords stay out as characters too
    assert Tokenizer(cjk_chars=False).tokenize("喝了茶") == ["喝", "茶"]


def test_mixed_chinese_and_english(tokenizer: Tokenizer) -> None:
    tokens = tokenizer.tokenize("我在用Python写RAG系统 running 2024年")
    assert "python" in tokens and "rag" in tokens and "run" in tokens
    assert "系统" in tokens and "2024" in tokens


def test_stopwords_can_be_switched_off() -> None:
    assert Tokenizer(stopwords=False).tokenize("the cat")[0] == "the"
    assert Tokenizer(stopwords=False, stemmer=None).tokenize("Running dogs") == ["running", "dogs"]


def test_same_text_same_tokens_across_instances() -> None:
    text = "Melanie painted a sunrise 去年 in 2022."
    assert Tokenizer().tokenize(text) == Tokenizer().tokenize(text)


def test_fingerprint_is_stable_and_tracks_every_setting() -> None:
    base = Tokenizer().fingerprint
    assert base == Tokenizer(**DEFAULT_TOKENIZER_SETTINGS).fingerprint
    assert len(base) == 12
    changed = {
        Tokenizer(stemmer=None).fingerprint,
        Tokenizer(stemmer="porter").fingerprint,
        Tokenizer(stopwords=False).fingerprint,
        Tokenizer(cjk_mode="words").fingerprint,
        Tokenizer(min_cjk_len=2).fingerprint,
        Tokenizer(cjk_chars=False).fingerprint,
    }
    assert base not in changed and len(changed) == 6


def test_invalid_settings_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown tokenizer settings"):
        Tokenizer(lowercase=False)
    with pytest.raises(ValueError, match="cjk_mode"):
        Tokenizer(cjk_mode="chars")
    with pytest.raises(ValueError, match="stemmer must be null or one of"):
        Tokenizer(stemmer="klingon")
    with pytest.raises(ValueError, match="stopwords must be true or false"):
        Tokenizer(stopwords="yes")
    with pytest.raises(ValueError, match="min_cjk_len"):
        Tokenizer(min_cjk_len=0)
    with pytest.raises(ValueError, match="cjk_chars"):
        Tokenizer(cjk_chars="yes")
