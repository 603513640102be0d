//! Whether the candidate still says what the base says: the answers of the output probes
//! (fixed prompts at temperature 0, `stepscope_load::probe_outputs`) compared token by token.
//!
//! The base's first probe is the reference. Every later probe of either side is compared
//! with it, prompt by prompt: the similarity of two answers is the length of their common
//! prefix over the longer answer's length, in token ids where both servers listed them, else
//! in characters of text (greedy decoding makes an answer diverge for good once it differs,
//! so a prefix is what agrees). An answer below `--output-similarity` (default 1: identical)
//! has changed. A candidate whose answers changed is reverted, whatever its speed, unless
//! `--allow-output-change`; a base whose own answers changed between probes cannot serve as
//! a reference, and nothing can be kept. An answer whose request failed is not compared (its
//! failure is not a changed output), but while any answer is missing the outputs are not
//! all checked, and nothing can be kept.

use super::gates::Verdict;
use serde::Serialize;
use stepscope_load::{ProbeAnswer, ProbeSet};
use stepscope_model::text::escape_controls;

/// Where two answers first differ.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutputDifference {
    /// The probe file the changed answer is in.
    pub probe: String,
    /// The prompt's position in the probe.
    pub prompt: usize,
    /// The token (or, without token ids, character) where they part.
    pub at: usize,
    /// `token` or `character`.
    pub unit: &'static str,
    /// The answers' similarity (common prefix over the longer).
    pub similarity: f64,
    /// The reference answer (the base's first probe), shortened.
    pub reference: String,
    /// The changed answer, shortened.
    pub answer: String,
}

/// The output check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutputCheck {
    /// How it bears on the decision.
    pub verdict: Verdict,
    /// `equal`, `changed`, `base_unstable`, `incomplete` (answers failed) or `not_checked`.
    pub status: &'static str,
    /// Probes compared: base, candidate.
    pub probes: [usize; 2],
    /// The similarity below which an answer has changed.
    pub min_similarity: f64,
    /// `--allow-output-change`: a change is shown, not decided on.
    pub allowed: bool,
    /// The lowest similarity of any candidate answer to its reference.
    pub lowest_similarity: Option<f64>,
    /// The first changed answer (of the base's own probes when the base is unstable).
    pub first_difference: Option<OutputDifference>,
    /// Answers that failed (either side's), so were not compared.
    pub failed_answers: usize,
    /// Why, in one sentence.
    pub detail: String,
}

/// Compares the sides' probes (each in the order they were made).
///
/// # Errors
///
/// The probes asked different prompts (another seed, length or `max_tokens`): their answers
/// cannot be compared.
pub fn check_outputs(
    base: &[(String, ProbeSet)],
    candidate: &[(String, ProbeSet)],
    min_similarity: f64,
    allowed: bool,
) -> Result<OutputCheck, String> {
    let probes = [base.len(), candidate.len()];
    let Some((reference_file, reference)) = base.first() else {
        return Ok(not_checked(
            probes,
            min_similarity,
            allowed,
            "the base has no output probe",
        ));
    };
    if candidate.is_empty() {
        let detail = "the candidate has no output probe";
        return Ok(not_checked(probes, min_similarity, allowed, detail));
    }
    for (file, set) in base.iter().chain(candidate) {
        comparable(reference_file, reference, file, set)?;
    }
    let own = compare_all(reference, &base[1..], min_similarity);
    let other = compare_all(reference, candidate, min_similarity);
    let failed_answers = own.failed + other.failed;
    let (status, verdict, detail, first) = classify(
        own.first,
        other.first,
        failed_answers,
        allowed,
        (reference, candidate.len(), min_similarity),
    );
    Ok(OutputCheck {
        verdict,
        status,
        probes,
        min_similarity,
        allowed,
        lowest_similarity: other.lowest,
        first_difference: first,
        failed_answers,
        detail,
    })
}

/// The status, verdict, detail and first difference, from the base's own first change
/// (`unstable`), the candidate's (`changed`) and the answers that failed.
fn classify(
    unstable: Option<OutputDifference>,
    changed: Option<OutputDifference>,
    failed_answers: usize,
    allowed: bool,
    (reference, candidates, min_similarity): (&ProbeSet, usize, f64),
) -> (&'static str, Verdict, String, Option<OutputDifference>) {
    match (unstable, changed) {
        (Some(own), _) => (
            "base_unstable",
            if allowed {
                Verdict::Pass
            } else {
                Verdict::BlocksKeep
            },
            format!(
                "the base's own answers at temperature 0 changed between its probes ({}), so the candidate's cannot be compared with them",
                describe(&own)
            ),
            Some(own),
        ),
        (None, Some(change)) => (
            "changed",
            if allowed {
                Verdict::Pass
            } else {
                Verdict::Revert
            },
            format!("outputs changed: {}", describe(&change)),
            Some(change),
        ),
        (None, None) if failed_answers > 0 => (
            "incomplete",
            Verdict::BlocksKeep,
            format!(
                "{failed_answers} probe answers failed, so the outputs were not all compared (the answers that came match)"
            ),
            None,
        ),
        (None, None) => {
            let threshold = if min_similarity < 1.0 {
                format!(" (similarity ≥ {min_similarity})")
            } else {
                String::new()
            };
            let detail = format!(
                "outputs equal: {} answers of {candidates} candidate probe(s) at temperature 0 match the base's{threshold}",
                reference.answers.len()
            );
            ("equal", Verdict::Pass, detail, None)
        }
    }
}

fn not_checked(probes: [usize; 2], min_similarity: f64, allowed: bool, why: &str) -> OutputCheck {
    OutputCheck {
        verdict: Verdict::NotChecked,
        status: "not_checked",
        probes,
        min_similarity,
        allowed,
        lowest_similarity: None,
        first_difference: None,
        failed_answers: 0,
        detail: format!("outputs not checked: {why}"),
    }
}

fn comparable(
    reference_file: &str,
    reference: &ProbeSet,
    file: &str,
    set: &ProbeSet,
) -> Result<(), String> {
    let same = set.prompts_sha256 == reference.prompts_sha256
        && set.max_tokens == reference.max_tokens
        && set.answers.len() == reference.answers.len();
    if same {
        return Ok(());
    }
    Err(format!(
        "the output probes `{reference_file}` and `{file}` asked different prompts ({} prompts of {} tokens, max_tokens {}, {} against {} of {}, max_tokens {}, {}): their answers cannot be compared\nhint: grade probes made with one seed and load",
        reference.answers.len(),
        reference.input_len,
        reference.max_tokens,
        reference.prompts_sha256.as_deref().unwrap_or("no digest"),
        set.answers.len(),
        set.input_len,
        set.max_tokens,
        set.prompts_sha256.as_deref().unwrap_or("no digest"),
    ))
}

/// Probes' answers against the reference's: the lowest similarity, the first answer below
/// `min_similarity`, and the answers not compared because a request failed.
struct Compared {
    lowest: Option<f64>,
    first: Option<OutputDifference>,
    failed: usize,
}

fn compare_all(
    reference: &ProbeSet,
    probes: &[(String, ProbeSet)],
    min_similarity: f64,
) -> Compared {
    let mut compared = Compared {
        lowest: None,
        first: None,
        failed: 0,
    };
    for (file, set) in probes {
        for (a, b) in reference.answers.iter().zip(&set.answers) {
            let Some(difference) = compare(a, b, file) else {
                compared.failed += 1;
                continue;
            };
            let similarity = difference.similarity;
            compared.lowest = Some(compared.lowest.map_or(similarity, |l| l.min(similarity)));
            if similarity < min_similarity && compared.first.is_none() {
                compared.first = Some(difference);
            }
        }
    }
    compared
}

/// How `answer` compares with `reference`; `None` when either request failed.
fn compare(reference: &ProbeAnswer, answer: &ProbeAnswer, file: &str) -> Option<OutputDifference> {
    if reference.error.is_some() || answer.error.is_some() {
        return None;
    }
    let (at, longest, unit) = match (&reference.token_ids, &answer.token_ids) {
        (Some(a), Some(b)) => (common_prefix(a, b), a.len().max(b.len()), "token"),
        _ => {
            let (a, b): (Vec<char>, Vec<char>) = (
                reference.text.chars().collect(),
                answer.text.chars().collect(),
            );
            (common_prefix(&a, &b), a.len().max(b.len()), "character")
        }
    };
    let similarity = if longest == 0 {
        1.0
    } else {
        at as f64 / longest as f64
    };
    Some(OutputDifference {
        probe: file.to_owned(),
        prompt: answer.index,
        at,
        unit,
        similarity,
        reference: shorten(&reference.text),
        answer: shorten(&answer.text),
    })
}

fn common_prefix<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The first 120 characters, control characters escaped.
fn shorten(text: &str) -> String {
    let text = escape_controls(text).into_owned();
    match text.char_indices().nth(120) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// `prompt 3 of probe-02.outputs.json parts at token 5 (similarity 0.16): base "…", now "…"`.
pub fn describe(difference: &OutputDifference) -> String {
    format!(
        "prompt {} of `{}` parts at {} {} (similarity {:.2}): reference \"{}\", answer \"{}\"",
        difference.prompt,
        difference.probe,
        difference.unit,
        difference.at,
        difference.similarity,
        difference.reference,
        difference.answer
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(index: usize, ids: &[u32]) -> ProbeAnswer {
        ProbeAnswer {
            index,
            text: ids.iter().map(|id| format!(" t{id}")).collect(),
            token_ids: Some(ids.to_vec()),
            finish_reason: Some("length".to_owned()),
            error: None,
        }
    }

    fn set(answers: Vec<ProbeAnswer>) -> ProbeSet {
        ProbeSet {
            schema_version: 1,
            kind: stepscope_load::PROBE_KIND.to_owned(),
            url: "http://x".to_owned(),
            model: "m".to_owned(),
            served_model: None,
            input_len: 8,
            max_tokens: 4,
            temperature: 0.0,
            prompts_sha256: Some("sha256:1".to_owned()),
            answers,
        }
    }

    fn probes(sets: &[Vec<ProbeAnswer>]) -> Vec<(String, ProbeSet)> {
        sets.iter()
            .enumerate()
            .map(|(i, a)| (format!("probe{i}.outputs.json"), set(a.clone())))
            .collect()
    }

    #[test]
    fn equal_answers_pass_and_a_changed_token_reverts() {
        let same = vec![answer(0, &[1, 2, 3, 4]), answer(1, &[5, 6, 7, 8])];
        let base = probes(&[same.clone(), same.clone()]);
        let check = check_outputs(&base, &probes(std::slice::from_ref(&same)), 1.0, false).unwrap();
        assert_eq!((check.status, check.verdict), ("equal", Verdict::Pass));
        assert_eq!(check.lowest_similarity, Some(1.0));

        let changed = vec![answer(0, &[1, 2, 3, 4]), answer(1, &[5, 9, 7, 8])];
        let check =
            check_outputs(&base, &probes(std::slice::from_ref(&changed)), 1.0, false).unwrap();
        assert_eq!((check.status, check.verdict), ("changed", Verdict::Revert));
        let first = check.first_difference.unwrap();
        assert_eq!((first.prompt, first.at, first.similarity), (1, 1, 0.25));
        assert!(
            check.detail.contains("parts at token 1"),
            "{}",
            check.detail
        );
        // A threshold of 0.2 lets a quarter-similar answer pass; allowing shows it only.
        let loose =
            check_outputs(&base, &probes(std::slice::from_ref(&changed)), 0.2, false).unwrap();
        assert_eq!(loose.verdict, Verdict::Pass);
        let allowed = check_outputs(&base, &probes(&[changed]), 1.0, true).unwrap();
        assert_eq!(
            (allowed.status, allowed.verdict),
            ("changed", Verdict::Pass)
        );
    }

    #[test]
    fn an_unstable_base_blocks_and_missing_or_foreign_probes_are_said() {
        let a = vec![answer(0, &[1, 2, 3, 4])];
        let b = vec![answer(0, &[1, 2, 9, 4])];
        let unstable = check_outputs(
            &probes(&[a.clone(), b]),
            &probes(std::slice::from_ref(&a)),
            1.0,
            false,
        )
        .unwrap();
        assert_eq!(
            (unstable.status, unstable.verdict),
            ("base_unstable", Verdict::BlocksKeep)
        );
        let none = check_outputs(&[], &probes(std::slice::from_ref(&a)), 1.0, false).unwrap();
        assert_eq!(none.verdict, Verdict::NotChecked);
        let mut other = probes(std::slice::from_ref(&a));
        other[0].1.prompts_sha256 = Some("sha256:2".to_owned());
        let error = check_outputs(&probes(&[a]), &other, 1.0, false).unwrap_err();
        assert!(error.contains("asked different prompts"), "{error}");
    }

    #[test]
    fn a_failed_answer_is_not_compared_but_blocks_and_text_is_compared_without_ids() {
        let mut failed = answer(1, &[]);
        failed.error = Some("http_status: HTTP 500".to_owned());
        let check = check_outputs(
            &probes(&[vec![answer(0, &[1, 2]), answer(1, &[3])]]),
            &probes(&[vec![answer(0, &[1, 2]), failed]]),
            1.0,
            false,
        )
        .unwrap();
        assert_eq!(
            (check.status, check.verdict),
            ("incomplete", Verdict::BlocksKeep)
        );
        assert_eq!(check.failed_answers, 1);
        let mut text = answer(0, &[1, 2]);
        text.token_ids = None;
        text.text = " t1 t3".to_owned();
        let check = check_outputs(
            &probes(&[vec![answer(0, &[1, 2])]]),
            &probes(&[vec![text]]),
            1.0,
            false,
        )
        .unwrap();
        let first = check.first_difference.unwrap();
        assert_eq!((first.unit, first.at), ("character", 5));
    }
}
