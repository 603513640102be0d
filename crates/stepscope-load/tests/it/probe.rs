//! Output probes against the instant server, whose answers are a function of the prompt and
//! its salt (as greedy decoding is of the prompt and the model): the same server answers the
//! same twice, token by token; another salt answers otherwise.

use crate::load::small_options;
use stepscope_load::{BenchOptions, ProbeSet, ProbeSettings, probe_outputs};
use stepscope_test_server::{InstantServer, InstantServerOptions};

fn probe(options: &BenchOptions) -> ProbeSet {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let settings = ProbeSettings {
        prompts: 4,
        max_tokens: 12,
    };
    runtime
        .block_on(probe_outputs(options, settings, std::future::pending()))
        .expect("the probe runs")
}

#[test]
fn the_same_server_answers_alike_and_another_salt_does_not() {
    let server = InstantServer::start(InstantServerOptions::default()).unwrap();
    let other = InstantServer::start(InstantServerOptions::default().with_output_salt(7)).unwrap();
    let first = probe(&small_options(&server));
    let again = probe(&small_options(&server));
    assert_eq!(first.answers, again.answers);
    assert_eq!(first.answers.len(), 4);
    for answer in &first.answers {
        let ids = answer
            .token_ids
            .as_ref()
            .expect("the server listed token ids");
        assert_eq!(ids.len(), 12);
        assert_eq!(answer.text.split_whitespace().count(), 12);
        assert_eq!(answer.finish_reason.as_deref(), Some("length"));
        assert_eq!(answer.error, None);
    }
    assert_eq!(first.prompts_sha256, again.prompts_sha256);
    assert_eq!((first.max_tokens, first.temperature), (12, 0.0));

    let changed = probe(&small_options(&other));
    assert_eq!(changed.prompts_sha256, first.prompts_sha256);
    assert_ne!(changed.answers[0].token_ids, first.answers[0].token_ids);
    assert_ne!(changed.answers[0].text, first.answers[0].text);
}

#[test]
fn a_failed_answer_is_kept_with_its_reason() {
    use stepscope_test_server::Fault;
    let server =
        InstantServer::start(InstantServerOptions::default().with_fault(Fault::Status(500), 2))
            .unwrap();
    let set = probe(&small_options(&server));
    assert_eq!(set.answers.len(), 4);
    let failed: Vec<_> = set.answers.iter().filter(|a| a.error.is_some()).collect();
    assert_eq!(failed.len(), 2, "{:?}", set.answers);
    assert!(
        failed[0]
            .error
            .as_deref()
            .unwrap()
            .starts_with("http_status: HTTP 500")
    );
}
