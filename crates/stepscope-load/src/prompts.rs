//! Seeded random prompts and the request bodies that carry them.
//!
//! Token-id prompts are `input_len` ids drawn uniformly from `[0, vocab_size)` with ChaCha8
//! (value-stable across `rand` releases), so a seed always sends the same prompts. The
//! measured prompts come first from the seed's stream and warmup prompts after them, so the
//! measured prompts do not change with `warmup`.

use crate::options::{Api, BenchOptions, PromptSource};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;
use sha2::{Digest, Sha256};

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
    use crate::vocabulary::WordVocabulary;

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
