use super::*;

/// [`Reader::event`] by the general reader alone.
fn event<'a>(bytes: &'a [u8], pos: usize, event: &mut RawEvent<'a>) -> Result<usize, ParseFailure> {
    *event = RawEvent::default();
    let mut lexer = Lexer { bytes, pos };
    match lexer.event(event) {
        Ok(_) => Ok(lexer.pos),
        Err(fail) => Err(fail.into_failure(bytes.len())),
    }
}

fn read(text: &str) -> Result<RawEvent<'_>, ParseFailure> {
    let mut read = RawEvent::default();
    event(text.as_bytes(), 0, &mut read).map(|_| read)
}

#[test]
fn reads_the_same_event_as_serde() {
    let texts = [
        r#"{"ph":"X","cat":"kernel","name":"k","pid":"2","tid":"stream 7","ts":"10.5","dur":"2","args":{"correlation":"77","stream":7},"extra":1}"#,
        r#"{"ph": "X", "cat":"cpu_op","name":"a\"b\u00e9\ud83d\ude00","pid":1,"tid":-3,"ts":1767189312123.456,"dur":1e3,"args":{"Input Dims":[[1,2],[]],"x":{"y":[true,false,null]},"kernel":"k\n"},"tts":5}"#,
        r#"{"ph":5,"cat":null,"name":["x"],"pid":18446744073709551615,"ts":-0.5,"args":null,"id":{"a":1}}"#,
        r#"{}"#,
        r#"{"args":{}}"#,
        // Keys spelled with escapes, or with a longer key sharing the first bytes.
        r#"{"p\u0068":"X","c\u0061t":"kernel","names":1,"pid0":2,"ts":3,"name":"k"}"#,
        r#"{ "ph" : "X" , "cat" :"cpu_op","args" :{"name":"n"},"dur" :1,"tid":2}"#,
    ];
    for text in texts {
        let ours = read(text).unwrap();
        let theirs: RawEvent = serde_json::from_str(text).unwrap();
        assert_eq!(ours, theirs, "{text}");
    }
}

#[test]
fn python_functions_are_only_checked_in_any_key_order() {
    let text = r#"{"ph":"X","cat":"python_function","name":"f","pid":1,"ts":2,"dur":1,"args":{"Python id":3},"odd":1}"#;
    let event = read(text).unwrap();
    assert_eq!(event.name, None, "the name of a counted event is not kept");
    assert_eq!(event.ts, None);
    assert_eq!(event.unknown_keys, vec![Text(Cow::Borrowed("odd"))]);
    let bad_name = r#"{"ph":"X","cat":"python_function","name":7}"#;
    assert_eq!(read(bad_name).unwrap().malformed_fields, 1);
    assert!(read(r#"{"ph":"X","cat":"python_function","args":3}"#).is_err());
    let sorted = r#"{"args":{"Python id":3},"cat":"python_function","name":"f","ph":"X","ts":1}"#;
    let event = read(sorted).unwrap();
    assert_eq!((event.args, event.ts), (Args::default(), None));
    let recategorised = r#"{"ph":"X","cat":"python_function","name":"k","ts":2,"cat":"kernel"}"#;
    let theirs: RawEvent = serde_json::from_str(recategorised).unwrap();
    assert_eq!(read(recategorised).unwrap(), theirs);
    // Read where they stood while it looked kept, then counted after all: dropped.
    let counted_after_all = r#"{"ph":"X","cat":"kernel","name":"k","ts":2,"args":{"correlation":5},"x":1,"cat":"python_function"}"#;
    let event = read(counted_after_all).unwrap();
    assert_eq!(
        (&event.name, &event.ts, &event.args),
        (&None, &None, &Args::default())
    );
    assert_eq!(event.unknown_keys, vec![Text(Cow::Borrowed("x"))]);
}

/// Counted events as writers print them, each read once to learn its shape.
const COUNTED: [&str; 4] = [
    r#"{"ph": "X", "cat": "python_function", "name": "torch/nn/modules/module.py(1751): _call_impl", "pid": 851, "tid": 851, "ts": 6520488433565.563, "dur": 0.11, "args": {"Python parent id": 141357, "Python id": 141358, "Ev Idx": 1763940}}"#,
    r#"{"args":{"Python id":3,"x":[1,"a\"b",{"b":null,"c":true}],"y":-2.5e-3},"cat":"python_function","dur":1,"name":"f","ph":"X","pid":"7","ts":2}"#,
    "{\n  \"ph\": \"X\",\n  \"cat\": \"python_function\",\n  \"name\": \"<built-in method \\u00e9>\",\n  \"ts\": 0\n}",
    r#"{"ph":"X","cat":"python_function"}"#,
];

/// Whether the shaped reader (having read `learned` first) and the general reader make
/// the same of `text`: the same event and end, or the same failure.
fn same_either_way(learned: &str, text: &[u8]) -> bool {
    let mut reader = Reader::default();
    reader.event(learned.as_bytes(), 0).unwrap();
    let shaped_end = reader.event(text, 0);
    let shaped = reader.current().clone();
    let mut general = RawEvent::default();
    let general_end = event(text, 0, &mut general);
    match (shaped_end, general_end) {
        (Ok(a), Ok(b)) => a == b && shaped == general,
        (Err(a), Err(b)) => format!("{a:?}") == format!("{b:?}"),
        _ => false,
    }
}

#[test]
fn a_learned_shape_reads_other_values_as_the_general_reader_does() {
    for learned in COUNTED {
        let mut reader = Reader::default();
        reader.event(learned.as_bytes(), 0).unwrap();
        let changed = learned
            .replace("851", "-1e5")
            .replace(r#""f""#, r#""g\u0041""#)
            .replace("_call_impl", "other");
        let end = reader.event(changed.as_bytes(), 0).unwrap();
        assert_eq!(reader.shapes.hits(), 1, "{changed}");
        assert_eq!(end, changed.len());
        assert!(same_either_way(learned, changed.as_bytes()));
    }
}

#[test]
fn a_learned_shape_fails_or_misses_wherever_a_byte_changes() {
    const BYTES: &[u8] = b"\"\\ 019.eE+-xnu{}[],:\n\x01\xff";
    for learned in COUNTED {
        let original = learned.as_bytes();
        for at in 0..original.len() {
            let mut cut = original.to_vec();
            cut.remove(at);
            assert!(
                same_either_way(learned, &cut),
                "{learned}: without byte {at}"
            );
            assert!(
                same_either_way(learned, &original[..at]),
                "{learned}: cut at {at}"
            );
            for &byte in BYTES {
                let mut text = original.to_vec();
                text[at] = byte;
                assert!(same_either_way(learned, &text), "{learned}: {byte} at {at}");
                text.insert(at, byte);
                assert!(
                    same_either_way(learned, &text),
                    "{learned}: {byte} before {at}"
                );
            }
        }
    }
}

#[test]
fn a_kept_event_reads_the_same_whatever_its_key_order() {
    // Kineto writes `ph` and `cat` first (fields then read where they stand); tools that
    // sort keys put them after the rest (fields read at the end). Duplicates: the last.
    let kineto = r#"{"ph":"X","cat":"kernel","name":"k","pid":1,"tid":7,"ts":10.5,"dur":2,"id":3,"args":{"correlation":77,"stream":7,"Ev Idx":1},"ts":11}"#;
    let sorted = r#"{"args":{"Ev Idx":1,"correlation":77,"stream":7},"cat":"kernel","dur":2,"id":3,"name":"k","ph":"X","pid":1,"tid":7,"ts":10.5,"ts":11}"#;
    let theirs: RawEvent = serde_json::from_str(kineto).unwrap();
    assert_eq!(read(kineto).unwrap(), theirs);
    assert_eq!(read(sorted).unwrap(), theirs);
    let mixed = r#"{"ts":1,"ph":"X","cat":"kernel","ts":2}"#;
    assert_eq!(read(mixed).unwrap().ts, Some(Number::Integer(2)));
    let mixed = r#"{"ph":"X","cat":"kernel","ts":1,"cat":"cpu_op","ts":2}"#;
    assert_eq!(read(mixed).unwrap().ts, Some(Number::Integer(2)));
}

#[test]
fn finds_the_first_non_digit_in_every_lane() {
    for at in 0..8 {
        for byte in (0..=255u8).filter(|b| !b.is_ascii_digit()) {
            let mut word = *b"01234567";
            word[at] = byte;
            // Bytes after it that would carry or borrow: never change the answer.
            for after in at + 1..8 {
                word[after] = [0x00, 0xff, b'9', b'/'][after % 4];
            }
            assert_eq!(non_digit_in_word(&word), Some(at), "{byte:#x} at {at}");
        }
    }
    assert_eq!(non_digit_in_word(b"98765432"), None);
    let mut lexer = Lexer {
        bytes: b"12345678901234567.5",
        pos: 0,
    };
    lexer.digits();
    assert_eq!(lexer.pos, 17);
}

#[test]
fn finds_specials_in_every_lane() {
    for at in 0..40 {
        let mut text = vec![b'a'; 40];
        for special in [b'"', b'\\', 0x1f, 0x00] {
            text[at] = special;
            assert_eq!(find_special(&text, 0), at);
        }
        text[at] = 0xe9;
        assert_eq!(find_special(&text, 0), 40);
    }
}

#[test]
fn finds_quotes_and_backslashes_at_every_place_from_every_start() {
    for len in 0..100 {
        for at in 0..=len {
            for special in [b'"', b'\\'] {
                let mut text = vec![b'a'; len];
                if at < len {
                    text[at] = special;
                    // A second one after it, and bytes that are neither around it.
                    text.iter_mut()
                        .skip(at + 1)
                        .step_by(3)
                        .for_each(|b| *b = b'"');
                    text.iter_mut().take(at).step_by(2).for_each(|b| *b = 0xe9);
                }
                for from in 0..=at {
                    let expected = text[from..].iter().position(|b| *b == b'"' || *b == b'\\');
                    let expected = from + expected.unwrap_or(len - from);
                    assert_eq!(
                        find_quote_or_backslash(&text, from),
                        expected,
                        "{len} {at} {from}"
                    );
                    assert_eq!(find_quote_or_backslash_by_words(&text, from), expected);
                }
            }
        }
    }
}

#[test]
fn bad_events_fail_where_serde_fails() {
    let texts = [
        r#"{"ph":"X",}"#,
        r#"{"ph":"X" "cat":"k"}"#,
        r#"{"ph" "X"}"#,
        r#"{"cat""kernel"}"#,
        r#"{"ph":01}"#,
        r#"{"args":5}"#,
        r#"{"args":{"x":tru}}"#,
        r#"{"name":"a\qb"}"#,
        "{\"name\":\"a\tb\"}",
        r#"{"x":[1,]}"#,
        r#"[1]"#,
    ];
    for text in texts {
        assert!(read(text).is_err(), "{text}");
        assert!(serde_json::from_str::<RawEvent>(text).is_err(), "{text}");
    }
}

#[test]
fn cuts_end_at_the_end() {
    let text = r#"{"ph":"X","cat":"kernel","name":"k\u00e9","ts":1.5,"args":{"x":[1,{"y":"z"}]}}"#;
    for cut in 1..text.len() {
        let failure = read(&text[..cut]).unwrap_err();
        assert!(failure.at_end_of_input, "{cut}: {failure:?}");
        assert_eq!(failure.offset, cut as u64);
    }
}

#[test]
fn a_common_shape_is_learned_after_many_rare_ones() {
    let rare =
        (0..100).map(|i| format!(r#"{{"ph":"X","cat":"python_function","args":{{"k{i}":1}}}}"#));
    let common = (0..300).map(|i| format!(r#"{{"ph":"X","cat":"python_function","ts":{i}}}"#));
    let text = rare.chain(common).collect::<Vec<_>>().join(",");
    let bytes = text.as_bytes();
    let (mut reader, mut pos) = (Reader::default(), 0);
    while pos < bytes.len() {
        pos = reader.event(bytes, pos).unwrap() + 1;
        assert_eq!(
            reader.current().category,
            Some(Text(Cow::Borrowed("python_function")))
        );
    }
    assert!(
        reader.shapes.hits() > 250,
        "{} read by a shape",
        reader.shapes.hits()
    );
}

/// `text` read by the fast path, when it takes it, is bit for bit what `str::parse` reads.
fn decimal_as_parse_reads_it(text: &str) -> Option<f64> {
    let fast = short_decimal(text.as_bytes())?;
    let parsed: f64 = text.parse().unwrap();
    assert_eq!(fast.to_bits(), parsed.to_bits(), "{text}");
    Some(fast)
}

#[test]
fn short_decimals_read_as_str_parse_reads_them() {
    let taken = [
        "6520488433619.812",
        "0.16",
        "-0.0",
        "0.1",
        "9007199254740.992",
        "900719925474099.2",
        "0.00000000000000001",
        "123456789012345678.9",
    ];
    for text in taken {
        let value = decimal_as_parse_reads_it(text);
        assert_eq!(value.is_some(), !text.starts_with("1234"), "{text}");
    }
    // Digits past 2^53, more than 19 bytes of them, exponents: left to `parse`.
    let left = [
        "9007199254740.993",
        "12345678901234567890.5",
        "0.0000000000000000000001",
        "1.5e3",
        "2E-3",
    ];
    for text in left {
        assert_eq!(short_decimal(text.as_bytes()), None, "{text}");
    }
}

proptest::proptest! {
    #[test]
    fn any_decimal_the_fast_path_takes_reads_as_str_parse_reads_it(
        negative: bool,
        whole in "(0|[1-9][0-9]{0,15})",
        fraction in "[0-9]{1,8}",
    ) {
        let text = format!("{}{whole}.{fraction}", if negative { "-" } else { "" });
        decimal_as_parse_reads_it(&text);
    }
}
