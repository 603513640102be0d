//! The JSON grammar under the event reader: numbers, literals, strings with their escapes,
//! and values skipped by grammar alone (still checked, so a corrupt file fails where it is
//! corrupt).

use super::*;

impl<'a> Lexer<'a> {
    /// A number as written, a string (kept as text), or any other value (`Invalid`).
    pub(super) fn number(&mut self) -> Step<Number<'a>> {
        match self.peek()? {
            b'-' | b'0'..=b'9' => self.number_value(),
            b'"' => match self.text_value()? {
                Some(text) => Ok(Number::Text(text.0)),
                None => Ok(Number::Invalid),
            },
            _ => {
                self.skip_value(1)?;
                Ok(Number::Invalid)
            }
        }
    }

    pub(super) fn number_value(&mut self) -> Step<Number<'a>> {
        let start = self.pos;
        let integral = self.number_grammar()?;
        let text = &self.bytes[start..self.pos];
        if integral {
            if let Some(value) = parse_i64(text) {
                return Ok(Number::Integer(value));
            }
        } else if let Some(value) = short_decimal(text) {
            return Ok(Number::Float(value));
        }
        // ASCII by the grammar just checked.
        let text = std::str::from_utf8(text).unwrap_or("");
        match text.parse::<f64>() {
            Ok(value) if value.is_finite() => Ok(Number::Float(value)),
            _ => Err(Fail {
                offset: start,
                message: &"number out of range",
            }),
        }
    }

    /// Steps over a JSON number; says whether it was an integer (no fraction, no exponent).
    #[inline(always)]
    pub(super) fn number_grammar(&mut self) -> Step<bool> {
        if self.bytes.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        match self.bytes.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.digits(),
            Some(_) => return Err(self.fail(&"invalid number")),
            None => return Err(self.end()),
        }
        let mut integral = true;
        if self.bytes.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            self.required_digits()?;
            integral = false;
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.pos) {
                self.pos += 1;
            }
            self.required_digits()?;
            integral = false;
        }
        Ok(integral)
    }

    /// Steps over a run of ASCII digits, a word at a time (a timestamp has 13 or more).
    #[inline(always)]
    pub(super) fn digits(&mut self) {
        while let Some(word) = self.bytes.get(self.pos..self.pos + 8) {
            match non_digit_in_word(word) {
                Some(at) => {
                    self.pos += at;
                    return;
                }
                None => self.pos += 8,
            }
        }
        let rest = &self.bytes[self.pos..];
        self.pos += rest
            .iter()
            .position(|byte| !byte.is_ascii_digit())
            .unwrap_or(rest.len());
    }

    pub(super) fn required_digits(&mut self) -> Step<()> {
        match self.bytes.get(self.pos) {
            Some(b'0'..=b'9') => {
                self.digits();
                Ok(())
            }
            Some(_) => Err(self.fail(&"invalid number")),
            None => Err(self.end()),
        }
    }

    pub(super) fn literal(&mut self, word: &'static [u8]) -> Step<()> {
        let rest = &self.bytes[self.pos..];
        if rest.starts_with(word) {
            self.pos += word.len();
            return Ok(());
        }
        if word.starts_with(rest) {
            return Err(self.end());
        }
        Err(self.fail(&"expected a value"))
    }

    /// Steps over any value, checking its grammar; `depth` is how deep it sits already.
    pub(super) fn skip_value(&mut self, depth: u32) -> Step<()> {
        match self.peek()? {
            b'"' => self.skip_string(),
            b'{' => self.skip_object(depth + 1),
            b'[' => self.skip_array(depth + 1),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number_grammar().map(drop),
            _ => Err(self.fail(&"expected a value")),
        }
    }

    /// [`Self::skip_value`] for a member of a container: strings and numbers (most members)
    /// stepped over here, without a call.
    #[inline(always)]
    pub(super) fn skip_member_value(&mut self, depth: u32) -> Step<()> {
        match self.peek()? {
            b'"' => self.skip_string(),
            b'-' | b'0'..=b'9' => self.number_grammar().map(drop),
            _ => self.skip_value(depth),
        }
    }

    pub(super) fn skip_object(&mut self, depth: u32) -> Step<()> {
        if depth > MAX_DEPTH {
            return Err(self.fail(&"values nested too deep"));
        }
        if !self.open_object(&"expected `{`")? {
            return Ok(());
        }
        loop {
            if self.peek()? != b'"' {
                return Err(self.fail(&"expected a key (a string) in an object"));
            }
            self.skip_key()?;
            self.expect(b':', &"expected `:` after a key")?;
            self.skip_member_value(depth)?;
            if !self.next_member(b'}', &"expected `,` or `}` after a value in an object")? {
                return Ok(());
            }
        }
    }

    pub(super) fn skip_array(&mut self, depth: u32) -> Step<()> {
        if depth > MAX_DEPTH {
            return Err(self.fail(&"values nested too deep"));
        }
        self.expect(b'[', &"expected `[`")?;
        if self.peek()? == b']' {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.skip_member_value(depth)?;
            if !self.next_member(b']', &"expected `,` or `]` after a value in an array")? {
                return Ok(());
            }
        }
    }

    /// Steps over a string (on its opening quote), checking its escapes. Control bytes in
    /// it are not looked for: the string is not read, and the search for its end alone
    /// runs at vector speed (most bytes of a `with_stack` trace are such strings).
    #[inline(always)]
    pub(super) fn skip_string(&mut self) -> Step<()> {
        self.pos += 1;
        loop {
            self.pos = find_quote_or_backslash(self.bytes, self.pos);
            match self.bytes.get(self.pos) {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    self.escape(None)?;
                }
                _ => return Err(self.end()),
            }
        }
    }

    /// [`Self::skip_string`] for a key: keys are short, so the first two words are tested
    /// in place before the vector search.
    #[inline(always)]
    pub(super) fn skip_key(&mut self) -> Step<()> {
        let mut from = self.pos + 1;
        for _ in 0..2 {
            let Some(word) = self.bytes.get(from..from + 8) else {
                break;
            };
            match first_flagged(quotes_and_backslashes(load_word(word))) {
                Some(at) if self.bytes[from + at] == b'"' => {
                    self.pos = from + at + 1;
                    return Ok(());
                }
                Some(_) => break,
                None => from += 8,
            }
        }
        self.skip_string()
    }

    /// A string (on its opening quote): borrowed when it has no escapes, else decoded.
    #[inline(always)]
    pub(super) fn string(&mut self) -> Step<Raw<'a>> {
        let start = self.pos + 1;
        self.pos = find_special(self.bytes, start);
        match self.bytes.get(self.pos) {
            Some(b'"') => {
                self.pos += 1;
                Ok(Raw::Borrowed(&self.bytes[start..self.pos - 1]))
            }
            Some(b'\\') => self.escaped_string(start),
            Some(_) => Err(self.fail(&"control character in a string")),
            None => Err(self.end()),
        }
    }

    /// The rest of a string with escapes, decoded; `self.pos` is on the first backslash.
    pub(super) fn escaped_string(&mut self, start: usize) -> Step<Raw<'a>> {
        let mut decoded = self.bytes[start..self.pos].to_vec();
        loop {
            match self.bytes.get(self.pos) {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(Raw::Owned(decoded));
                }
                Some(b'\\') => self.escape(Some(&mut decoded))?,
                Some(_) => return Err(self.fail(&"control character in a string")),
                None => return Err(self.end()),
            }
            let from = self.pos;
            self.pos = find_special(self.bytes, from);
            decoded.extend_from_slice(&self.bytes[from..self.pos]);
        }
    }

    /// One escape (on its backslash), appended to `out` when given.
    pub(super) fn escape(&mut self, out: Option<&mut Vec<u8>>) -> Step<()> {
        self.pos += 1;
        let Some(&code) = self.bytes.get(self.pos) else {
            return Err(self.end());
        };
        self.pos += 1;
        let byte = match code {
            b'"' | b'\\' | b'/' => code,
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => return self.unicode_escape(out),
            _ => {
                self.pos -= 1;
                return Err(self.fail(&"invalid escape in a string"));
            }
        };
        if let Some(out) = out {
            out.push(byte);
        }
        Ok(())
    }

    /// `\uXXXX` after its `u`, with a following low surrogate when it is a high one.
    pub(super) fn unicode_escape(&mut self, out: Option<&mut Vec<u8>>) -> Step<()> {
        let first = self.hex4()?;
        let Some(out) = out else {
            return Ok(());
        };
        let code = if (0xD800..0xDC00).contains(&first) {
            if !self.bytes[self.pos..].starts_with(b"\\u") {
                return Err(self.trailing_surrogate_fail());
            }
            self.pos += 2;
            let second = self.hex4()?;
            if !(0xDC00..0xE000).contains(&second) {
                return Err(self.fail(&"invalid low surrogate in a \\u escape"));
            }
            0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
        } else {
            first
        };
        let Some(character) = char::from_u32(code) else {
            return Err(self.fail(&"lone surrogate in a \\u escape"));
        };
        let mut buffer = [0u8; 4];
        out.extend_from_slice(character.encode_utf8(&mut buffer).as_bytes());
        Ok(())
    }

    pub(super) fn trailing_surrogate_fail(&self) -> Fail {
        let rest = &self.bytes[self.pos..];
        if rest.is_empty() || rest == b"\\" {
            return self.end();
        }
        self.fail(&"lone surrogate in a \\u escape")
    }

    pub(super) fn hex4(&mut self) -> Step<u32> {
        let mut value = 0;
        for _ in 0..4 {
            let Some(&byte) = self.bytes.get(self.pos) else {
                return Err(self.end());
            };
            let digit = match byte {
                b'0'..=b'9' => byte - b'0',
                b'a'..=b'f' => byte - b'a' + 10,
                b'A'..=b'F' => byte - b'A' + 10,
                _ => return Err(self.fail(&"invalid \\u escape in a string")),
            };
            value = value * 16 + u32::from(digit);
            self.pos += 1;
        }
        Ok(value)
    }
}
