//! Seeded random prompts and the request bodies that carry them.
//!
//! Token-id prompts are `input_len` ids drawn uniformly from `[0, vocab_size)` with ChaCha8
//! (value-stable across `rand` releases), so a seed always sends the same prompts. The
//! measured prompts come first from the seed's stream and warmup prompts after them, so the
//! measured prompts do not change with `warmup`.

use crate::error::LoadError;
use crate::options::{Api, BenchOptions, PromptSource};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::Path;

/// `count` prompts of `input_len` random token ids below `vocab_size`, from `seed`: the
/// measured prompts of a run with these options.
pub fn token_id_prompts(
    seed: u64,
    count: usize,
    input_len: usize,
    vocab_size: u32,
) -> Vec<Vec<u32>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..count)
        .map(|_| random_ids(&mut rng, input_len, vocab_size))
        .collect()
}

fn random_ids(rng: &mut ChaCha8Rng, input_len: usize, vocab_size: u32) -> Vec<u32> {
    (0..input_len)
        .map(|_| rng.random_range(0..vocab_size.max(1)))
        .collect()
}

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
    fn prompt(&self, rng: &mut ChaCha8Rng, input_len: usize) -> String {
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

/// One prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Prompt {
    TokenIds(Vec<u32>),
    Text(String),
}

impl Prompt {
    /// Prompt tokens as sent (for text, the words: the server's count may differ slightly).
    pub(crate) fn token_count(&self, input_len: usize) -> u64 {
        match self {
            Self::TokenIds(ids) => ids.len() as u64,
            Self::Text(_) => input_len as u64,
        }
    }
}

/// The prompts of one phase of a run, made one at a time in request order, so a run of any
/// length holds only the prompts in flight.
#[derive(Debug)]
pub(crate) struct PromptStream<'a> {
    rng: ChaCha8Rng,
    options: &'a BenchOptions,
    /// SHA-256 of the prompts made so far (measured prompts only): two runs that sent the
    /// same prompts have the same digest, whatever made them.
    digest: Option<Sha256>,
}

impl<'a> PromptStream<'a> {
    /// The measured prompts: the seed's own stream ([`token_id_prompts`] gives the same ids).
    pub(crate) fn measured(options: &'a BenchOptions) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(options.seed),
            options,
            digest: Some(Sha256::new()),
        }
    }

    /// Prompts made from a seed of their own (output probes).
    pub(crate) fn seeded(options: &'a BenchOptions, domain: &[u8]) -> Self {
        Self {
            rng: ChaCha8Rng::from_seed(domain_seed(options.seed, domain)),
            options,
            digest: None,
        }
    }

    /// Keeps the digest of the prompts this stream makes.
    pub(crate) fn with_digest(mut self) -> Self {
        self.digest = Some(Sha256::new());
        self
    }

    /// `sha256:<hex>` of the prompts made so far (`None` for unmeasured streams).
    pub(crate) fn digest(&self) -> Option<String> {
        let digest = self.digest.clone()?.finalize();
        let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        Some(format!("sha256:{hex}"))
    }

    /// Warmup prompts: a stream of their own, so `warmup` changes no measured prompt.
    pub(crate) fn warmup(options: &'a BenchOptions) -> Self {
        Self::seeded(options, b"warmup")
    }

    /// The initial test request's prompt: a stream of its own too.
    pub(crate) fn initial_test(options: &'a BenchOptions) -> Self {
        Self::seeded(options, b"initial-test")
    }

    /// The next prompt.
    pub(crate) fn next_prompt(&mut self) -> Prompt {
        let input_len = self.options.input_len;
        let prompt = match &self.options.prompts {
            PromptSource::TokenIds { vocab_size } => {
                Prompt::TokenIds(random_ids(&mut self.rng, input_len, *vocab_size))
            }
            PromptSource::Text(words) => Prompt::Text(words.prompt(&mut self.rng, input_len)),
        };
        if let Some(digest) = &mut self.digest {
            // Each prompt framed by its kind and length, so no two lists hash alike.
            match &prompt {
                Prompt::TokenIds(ids) => {
                    digest.update(b"ids");
                    digest.update((ids.len() as u64).to_le_bytes());
                    for id in ids {
                        digest.update(id.to_le_bytes());
                    }
                }
                Prompt::Text(text) => {
                    digest.update(b"text");
                    digest.update((text.len() as u64).to_le_bytes());
                    digest.update(text.as_bytes());
                }
            }
        }
        prompt
    }
}

/// A 256-bit seed of its own for each use of one user seed.
pub(crate) fn domain_seed(seed: u64, domain: &[u8]) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    for (slot, byte) in bytes[8..].iter_mut().zip(domain) {
        *slot = *byte;
    }
    bytes
}

/// The sampling temperature of every request: greedy, as `vllm bench serve` sends it.
pub(crate) const TEMPERATURE: f64 = 0.0;

#[derive(Serialize)]
#[serde(untagged)]
enum PromptField<'a> {
    Ids(&'a [u32]),
    Text(&'a str),
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct CompletionBody<'a> {
    model: &'a str,
    prompt: PromptField<'a>,
    max_tokens: usize,
    temperature: f64,
    stream: bool,
    stream_options: StreamOptions,
    ignore_eos: bool,
    return_token_ids: bool,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Serialize)]
struct ChatBody<'a> {
    model: &'a str,
    messages: [Message<'a>; 1],
    max_completion_tokens: usize,
    temperature: f64,
    stream: bool,
    stream_options: StreamOptions,
    ignore_eos: bool,
    return_token_ids: bool,
}

/// The JSON body of one request: streaming, usage in the last chunk, greedy (as
/// `vllm bench serve`), `ignore_eos`, `output_len` tokens, and `return_token_ids` so that
/// a server that supports it (vLLM) lists each chunk's tokens and they can be counted (one
/// that does not ignores the field).
pub(crate) fn request_body(options: &BenchOptions, prompt: &Prompt) -> Vec<u8> {
    let field = match prompt {
        Prompt::TokenIds(ids) => PromptField::Ids(ids),
        Prompt::Text(text) => PromptField::Text(text),
    };
    let stream_options = StreamOptions {
        include_usage: true,
    };
    let written = match (options.api, field) {
        (Api::Chat, PromptField::Text(content)) => serde_json::to_vec(&ChatBody {
            model: &options.model,
            messages: [Message {
                role: "user",
                content,
            }],
            max_completion_tokens: options.output_len,
            temperature: TEMPERATURE,
            stream: true,
            stream_options,
            ignore_eos: options.ignore_eos,
            return_token_ids: true,
        }),
        (_, prompt) => serde_json::to_vec(&CompletionBody {
            model: &options.model,
            prompt,
            max_tokens: options.output_len,
            temperature: TEMPERATURE,
            stream: true,
            stream_options,
            ignore_eos: options.ignore_eos,
            return_token_ids: true,
        }),
    };
    // Serializing strings, numbers and slices into a Vec cannot fail.
    written.unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_id_prompts_are_seeded_and_in_range() {
        let first = token_id_prompts(7, 3, 100, 50);
        assert_eq!(first, token_id_prompts(7, 3, 100, 50));
        assert_ne!(first, token_id_prompts(8, 3, 100, 50));
        assert!(first.iter().all(|ids| ids.len() == 100));
        assert!(first.iter().flatten().all(|&id| id < 50));
        // Every id is reachable: 300 draws from 50 values miss one with probability ≈ 1e-2,
        // and the seed is fixed.
        let mut seen = [false; 50];
        first
            .iter()
            .flatten()
            .for_each(|&id| seen[id as usize] = true);
        assert!(seen.iter().filter(|&&s| s).count() >= 45);
    }

    #[test]
    fn measured_prompts_are_the_public_ones_and_warmup_differs() {
        let options = BenchOptions {
            input_len: 8,
            seed: 3,
            ..BenchOptions::default()
        };
        let expected = token_id_prompts(3, 4, 8, 2048);
        let mut measured = PromptStream::measured(&options);
        let made: Vec<Prompt> = (0..4).map(|_| measured.next_prompt()).collect();
        let wanted: Vec<Prompt> = expected.into_iter().map(Prompt::TokenIds).collect();
        assert_eq!(made, wanted);
        let mut warmup = PromptStream::warmup(&options);
        assert_ne!(warmup.next_prompt(), made[0]);
    }

    #[test]
    fn bodies_ask_for_streamed_usage_and_exact_lengths() {
        let options = BenchOptions {
            model: "m".to_owned(),
            output_len: 5,
            ..BenchOptions::default()
        };
        let body = request_body(&options, &Prompt::TokenIds(vec![1, 2, 3]));
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"model": "m", "prompt": [1, 2, 3], "max_tokens": 5,
                "temperature": 0.0, "stream": true, "stream_options": {"include_usage": true},
                "ignore_eos": true, "return_token_ids": true})
        );
        let chat = BenchOptions {
            api: Api::Chat,
            ..options
        };
        let body = request_body(&chat, &Prompt::Text("hi there".to_owned()));
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value["messages"][0]["content"], "hi there");
        assert_eq!(value["max_completion_tokens"], 5);
    }

    #[test]
    fn words_come_from_marked_tokens_and_the_size_from_the_largest_id() {
        let mut vocab = serde_json::Map::new();
        for (i, word) in [
            "the", "cat", "sat", "on", "mat", "dog", "ran", "far", "red", "sun", "sky", "sea",
            "big", "old", "new", "hat", "cap",
        ]
        .iter()
        .enumerate()
        {
            vocab.insert(format!("Ġ{word}"), (i as u64 + 10).into());
        }
        vocab.insert("ing".to_owned(), 3.into());
        vocab.insert("Ġ1".to_owned(), 4.into());
        let json = serde_json::json!({
            "added_tokens": [{"id": 40, "content": "<eos>"}],
            "model": {"type": "BPE", "vocab": vocab, "merges": []}
        });
        let words = WordVocabulary::from_tokenizer_json(json.to_string().as_bytes()).unwrap();
        assert_eq!(words.vocab_size(), 41);
        assert_eq!(words.words().len(), 17);
        assert_eq!(words.words()[0], "the");
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let text = words.prompt(&mut rng, 6);
        assert_eq!(text.split(' ').count(), 6);
        assert!(WordVocabulary::from_tokenizer_json(b"{}").is_err());
    }
}
