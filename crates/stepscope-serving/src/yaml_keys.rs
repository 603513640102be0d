//! Dotted key paths of lines in block-style YAML, for errors that name the key.
//!
//! The YAML reader reports a line and column; users fix a key. This walks up from the line
//! to each less-indented `key:` line, so line 5 of `load:\n  concurrency: -3` is
//! `load.concurrency`. Flow collections (`{a: 1}`) name their enclosing key only.

/// The dotted key path of the line `line` (1-based), if the line or one above it holds a key.
pub(crate) fn key_path_at(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let index = line.checked_sub(1)?;
    let target = lines.get(index)?;
    let (mut indent, own_key) = match entry(target) {
        Some((indent, key)) => (indent, Some(key)),
        None => (indentation(target), None),
    };
    let mut path: Vec<&str> = own_key.into_iter().collect();
    for above in lines[..index].iter().rev() {
        if indent == 0 {
            break;
        }
        if let Some((above_indent, key)) = entry(above) {
            if above_indent < indent {
                path.push(key);
                indent = above_indent;
            }
        }
    }
    path.reverse();
    (!path.is_empty()).then(|| path.join("."))
}

/// Line (1-based) of the top-level `key:` (0 when absent).
pub(crate) fn top_level_line(text: &str, key: &str) -> usize {
    text.lines()
        .position(|line| entry(line).is_some_and(|(indent, k)| indent == 0 && k == key))
        .map_or(0, |index| index + 1)
}

fn indentation(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// `(indent, key)` of a `key: value` or `- key: value` line; `None` for anything else.
fn entry(line: &str) -> Option<(usize, &str)> {
    let mut indent = indentation(line);
    let mut rest = &line[indent..];
    while let Some(item) = rest.strip_prefix("- ") {
        let inner = item.trim_start_matches(' ');
        indent += rest.len() - inner.len();
        rest = inner;
    }
    if rest.starts_with('#') || rest.starts_with('[') || rest.starts_with('{') {
        return None;
    }
    let colon = rest
        .char_indices()
        .find(|&(i, c)| c == ':' && rest[i + 1..].chars().next().is_none_or(|n| n == ' '))?
        .0;
    let key = rest[..colon].trim().trim_matches(|c| c == '"' || c == '\'');
    (!key.is_empty() && !key.contains(' ')).then_some((indent, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "kind: profile\nserver:\n  port: 1\n  args:\n    - --tp\n    - \"1\"\nload:\n  # the load\n  concurrency: -3\nwindows:\n  - steps: 0\n";

    #[test]
    fn paths_follow_indentation() {
        assert_eq!(key_path_at(TEXT, 1).as_deref(), Some("kind"));
        assert_eq!(key_path_at(TEXT, 3).as_deref(), Some("server.port"));
        assert_eq!(key_path_at(TEXT, 6).as_deref(), Some("server.args"));
        assert_eq!(key_path_at(TEXT, 9).as_deref(), Some("load.concurrency"));
        assert_eq!(key_path_at(TEXT, 11).as_deref(), Some("windows.steps"));
        assert_eq!(key_path_at(TEXT, 99), None);
    }

    #[test]
    fn top_level_lines() {
        assert_eq!(top_level_line(TEXT, "load"), 7);
        assert_eq!(top_level_line(TEXT, "port"), 0);
        assert_eq!(top_level_line(TEXT, "envs"), 0);
    }
}
