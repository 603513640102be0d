//! A tokenizer's whole-word tokens, for text prompts: read from a local `tokenizer.json`
//! (Hugging Face's format) without its encoder.

use crate::error::LoadError;
use rand::RngExt;
use rand::rngs::ChaCha8Rng;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;

/// Whole-word tokens of a tokenizer's vocabulary, to build text prompts without the
/// tokenizer's encoder: a word token (`Ġword` in byte-level BPE, `▁word` in SentencePiece)
/// written after a space is, in practice, encoded back to that one token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WordVocabulary {
    words: Vec<String>,
    vocab_size: u32,
}

/// Fewer whole-word tokens than this make prompts too repetitive to be random.
const MIN_WORDS: usize = 16;

#[derive(Deserialize)]
struct TokenizerFile {
    #[serde(default)]
    added_tokens: Vec<AddedToken>,
    model: TokenizerModel,
}

#[derive(Deserialize)]
struct AddedToken {
    id: u32,
}

#[derive(Deserialize)]
struct TokenizerModel {
    #[serde(default)]
    vocab: Option<VocabForm>,
}

/// BPE, WordPiece and WordLevel map tokens to ids; Unigram lists `[piece, score]` by id.
#[derive(Deserialize)]
#[serde(untagged)]
enum VocabForm {
    Map(HashMap<String, u32>),
    List(Vec<(String, f64)>),
}

impl WordVocabulary {
    /// Reads a Hugging Face `tokenizer.json`.
    pub fn load(path: &Path) -> Result<Self, LoadError> {
        let bytes = fs_err::read(path).map_err(|source| LoadError::TokenizerRead {
            path: path.to_owned(),
            source,
        })?;
        Self::from_tokenizer_json(&bytes).map_err(|problem| LoadError::Tokenizer {
            path: path.to_owned(),
            problem,
        })
    }

    /// Parses the text of a `tokenizer.json`; the error says what is missing.
    pub fn from_tokenizer_json(bytes: &[u8]) -> Result<Self, String> {
        let file: TokenizerFile = serde_json::from_slice(bytes)
            .map_err(|error| format!("is not a tokenizer.json: {error}"))?;
        let mut tokens: Vec<(u32, String)> = match file.model.vocab {
            Some(VocabForm::Map(map)) => map.into_iter().map(|(token, id)| (id, token)).collect(),
            Some(VocabForm::List(list)) => (0u32..)
                .zip(list)
                .map(|(id, (token, _score))| (id, token))
                .collect(),
            None => return Err("has no `model.vocab`".to_owned()),
        };
        tokens.sort_unstable();
        let max_id = tokens.iter().map(|(id, _)| *id);
        let max_added = file.added_tokens.iter().map(|token| token.id);
        let vocab_size = max_id.chain(max_added).max().map_or(0, |id| id + 1);
        let words = whole_words(&tokens);
        if words.len() < MIN_WORDS {
            return Err(format!(
                "has {} whole-word tokens; text prompts need at least {MIN_WORDS}",
                words.len()
            ));
        }
        Ok(Self { words, vocab_size })
    }

    /// One more than the largest token id, added tokens included.
    pub fn vocab_size(&self) -> u32 {
        self.vocab_size
    }

    /// The word tokens prompts are made of, by id.
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// A prompt of `input_len` words drawn with `rng`, separated by spaces.
    pub(crate) fn prompt(&self, rng: &mut ChaCha8Rng, input_len: usize) -> String {
        let mut text = String::with_capacity(input_len * 8);
        for i in 0..input_len {
            if i > 0 {
                text.push(' ');
            }
            text.push_str(&self.words[rng.random_range(0..self.words.len())]);
        }
        text
    }
}

/// Tokens that are a space marker and letters; without such tokens (WordPiece, WordLevel),
/// tokens that are letters only.
fn whole_words(tokens: &[(u32, String)]) -> Vec<String> {
    let letters = |text: &str| text.len() >= 2 && text.bytes().all(|b| b.is_ascii_alphabetic());
    let marked: Vec<String> = tokens
        .iter()
        .filter_map(|(_, token)| {
            let word = token
                .strip_prefix('Ġ')
                .or_else(|| token.strip_prefix('▁'))?;
            letters(word).then(|| word.to_owned())
        })
        .collect();
    if !marked.is_empty() {
        return marked;
    }
    tokens
        .iter()
        .filter(|(_, token)| letters(token))
        .map(|(_, token)| token.clone())
        .collect()
}
