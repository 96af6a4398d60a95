//! A hand-rolled scanner for trace rows, several times faster than serde on the rows the
//! writers produce.
//!
//! It accepts a strict subset of what the serde path accepts (every column exactly once, in
//! any order, strings without escapes, no `obs` / `action`) and gives the value serde would
//! give: numbers follow the JSON grammar and are parsed by the standard library, which rounds
//! correctly as `serde_json`'s `float_roundtrip` does. Anything else returns `None` and goes
//! through serde, which then yields the same row or the error message.

use std::borrow::Cow;

use super::borrowed::{RowRef, Terms};
use crate::regime::Origin;
use crate::trace::{BOUND, COLUMNS, ROLE_REWARDS};

/// The position of `name` in [`COLUMNS`], found at compile time: the scanner's bit for
/// a column is its position there, so the mask of every column and the identity prefix
/// follow the list, and a column added to it reaches serde (the scanner finds no arm for
/// it) until the scanner learns it.
const fn column(name: &str) -> usize {
    let name = name.as_bytes();
    let mut k = 0;
    'columns: while k < COLUMNS.len() {
        let c = COLUMNS[k].as_bytes();
        k += 1;
        if c.len() != name.len() {
            continue;
        }
        let mut i = 0;
        while i < c.len() {
            if c[i] != name[i] {
                continue 'columns;
            }
            i += 1;
        }
        return k - 1;
    }
    panic!("not a trace column")
}

const RUN_ID: usize = column("run_id");
const SEED: usize = column("seed");
const ALGORITHM_ID: usize = column("algorithm_id");
const TASK: usize = column("task");
const STEP: usize = column("step");
const EPISODE: usize = column("episode");
const EPISODE_STEP: usize = column("episode_step");
const REWARD: usize = column("reward");
const COMPONENTS: usize = column("components");
const PAYOUT: usize = column("payout");
const REGIME: usize = column("regime");
const REGIME_ORIGIN: usize = column("regime_origin");
const TERMINATED: usize = column("terminated");
const TRUNCATED: usize = column("truncated");
const CEILING: usize = column("ceiling");

/// One bit per column of [`COLUMNS`].
const ALL: u32 = (1 << COLUMNS.len()) - 1;

/// The identity columns lead [`COLUMNS`]: the columns before this one are the prefix a run
/// repeats on every row.
const IDENTITY: usize = TASK + 1;

const _: () = assert!(
    COLUMNS.len() < 32,
    "the scanner keeps one bit per column in a u32"
);
const _: () = assert!(RUN_ID < IDENTITY && SEED < IDENTITY && ALGORITHM_ID < IDENTITY);

/// The index of the first `"`, `\\` or control byte at or after `i`: eight bytes at a
/// time, since string scanning dominates parsing. (The lowest flagged byte of each word
/// is exact; borrows can only flag bytes above it.)
fn special(b: &[u8], mut i: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    while let Some(chunk) = b.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let hits = zero(w ^ (ONES * u64::from(b'"')))
            | zero(w ^ (ONES * u64::from(b'\\')))
            | (w.wrapping_sub(ONES * 0x20) & !w & HIGH);
        if hits != 0 {
            return Some(i + (hits.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    b[i..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|p| i + p)
}

/// A cursor over a line already checked to be UTF-8, so every slice between ASCII
/// delimiters is a `str` without another check.
struct Scan<'a> {
    text: &'a str,
    b: &'a [u8],
    i: usize,
    /// Where the last string read lies.
    last: (usize, usize),
}

/// The identity columns a run repeats on every row, with the bytes they were read from:
/// a line that starts with the same bytes has the same values at the same offsets, so
/// the scanner skips them.
#[derive(Debug, Default)]
pub(in crate::trace::reader) struct Prefix {
    bytes: Vec<u8>,
    seed: u64,
    /// `run_id`, `algorithm_id` and `task`.
    spans: [(usize, usize); 3],
}

impl<'a> Scan<'a> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// Reads `"name":` when it comes next exactly so (the writers' form); otherwise moves
    /// nothing.
    fn key_is(&mut self, name: &str) -> bool {
        let n = name.len();
        let at = self.i;
        let found = self.b.get(at) == Some(&b'"')
            && self.b.get(at + 1..at + 1 + n) == Some(name.as_bytes())
            && self.b.get(at + 1 + n..at + 3 + n) == Some(b"\":");
        if found {
            self.i = at + 3 + n;
        }
        found
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    /// After a field's value: `,` (more fields follow: `false`) or `}` (the object ends:
    /// `true`); anything else is `None`.
    #[inline(always)]
    fn end_field(&mut self) -> Option<bool> {
        let end = match self.peek()? {
            b',' => false,
            b'}' => true,
            _ => return None,
        };
        self.i += 1;
        Some(end)
    }

    /// `null` or a number.
    #[inline(always)]
    fn nullable_f64(&mut self) -> Option<Option<f64>> {
        Some(if self.literal(b"null") {
            None
        } else {
            Some(self.f64()?)
        })
    }

    fn byte(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn str(&mut self) -> Option<&'a str> {
        self.byte(b'"')?;
        let start = self.i;
        self.i = special(self.b, start)?;
        if self.b[self.i] != b'"' {
            return None;
        }
        let s = self.text.get(start..self.i)?;
        self.last = (start, self.i);
        self.i += 1;
        Some(s)
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Option<(&'a str, bool)> {
        self.ws();
        let start = self.i;
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match *self.b.get(self.i)? {
            b'0' => self.i += 1,
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        let mut integer = true;
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            integer = false;
            if self.digits() == 0 {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.b.get(self.i) {
            self.i += 1;
            integer = false;
            if let Some(b'+' | b'-') = self.b.get(self.i) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        Some((self.text.get(start..self.i)?, integer))
    }

    fn u64(&mut self) -> Option<u64> {
        match self.number()? {
            (text, true) => text.parse().ok(),
            _ => None,
        }
    }

    fn f64(&mut self) -> Option<f64> {
        let v: f64 = self.number()?.0.parse().ok()?;
        v.is_finite().then_some(v)
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        self.ws();
        let found = self.b[self.i..].starts_with(word);
        if found {
            self.i += word.len();
        }
        found
    }

    fn bool(&mut self) -> Option<bool> {
        if self.literal(b"true") {
            Some(true)
        } else if self.literal(b"false") {
            Some(false)
        } else {
            None
        }
    }

    fn terms(&mut self) -> Option<Terms<'a>> {
        self.byte(b'{')?;
        let mut terms = Vec::new();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(Terms(terms));
        }
        loop {
            let name = self.str()?;
            self.byte(b':')?;
            terms.push((Cow::Borrowed(name), self.f64()?));
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(Terms(terms));
                }
                _ => return None,
            }
        }
    }
}

/// The row in `text`, or `None` to let serde decide.
pub(in crate::trace::reader) fn row<'a>(line: &'a [u8], prefix: &mut Prefix) -> Option<RowRef<'a>> {
    let text = std::str::from_utf8(line).ok()?;
    let mut s = Scan {
        text,
        b: line,
        i: 0,
        last: (0, 0),
    };
    let mut seen = 0u32;
    let (mut run_id, mut algorithm_id, mut task, mut regime) = ("", "", "", "");
    let (mut seed, mut step, mut episode, mut episode_step) = (0, 0, 0, 0);
    let mut reward = 0.0;
    let (mut components, mut payout) = (Terms::default(), Terms::default());
    let mut origin = Origin::Initial;
    let (mut terminated, mut truncated) = (false, false);
    let mut ceiling = None;
    let mut bound = None;
    let mut role_rewards = None;
    let mut notify = None;
    let mut next = 0;
    // Where `run_id`, `algorithm_id` and `task` lie.
    let mut spans = [(0, 0); 3];
    // True while the columns come in DESIGN order from the line's start.
    let mut in_order;
    if !prefix.bytes.is_empty() && line.starts_with(&prefix.bytes) {
        let span = |k: usize| text.get(prefix.spans[k].0..prefix.spans[k].1);
        (run_id, algorithm_id, task) = (span(0)?, span(1)?, span(2)?);
        seed = prefix.seed;
        seen = (1 << IDENTITY) - 1;
        next = IDENTITY;
        s.i = prefix.bytes.len();
        in_order = false;
    } else {
        s.byte(b'{')?;
        in_order = true;
    }
    loop {
        // Writers emit the columns in DESIGN order: the expected key is matched in place.
        let bit = if COLUMNS.get(next).is_some_and(|c| s.key_is(c)) {
            next
        } else {
            let key = s.str()?;
            s.byte(b':')?;
            match COLUMNS.iter().position(|c| *c == key) {
                Some(bit) => bit,
                None => {
                    // The optional columns, outside COLUMNS, each at most once.
                    match key {
                        // Written after `task` only when not `none`, so never last.
                        "notify" => {
                            once(&mut notify, s.str()?.parse().ok()?)?;
                            s.byte(b',')?;
                            continue;
                        }
                        // Written after `ceiling` for a world with an expected bound.
                        BOUND => once(&mut bound, s.nullable_f64()?)?,
                        // Written after `bound` for a world with roles.
                        ROLE_REWARDS => once(&mut role_rewards, s.terms()?)?,
                        _ => return None,
                    }
                    if s.end_field()? {
                        break;
                    }
                    continue;
                }
            }
        };
        in_order &= bit == next;
        next = bit + 1;
        match bit {
            RUN_ID => {
                run_id = s.str()?;
                spans[0] = s.last;
            }
            SEED => seed = s.u64()?,
            ALGORITHM_ID => {
                algorithm_id = s.str()?;
                spans[1] = s.last;
            }
            TASK => {
                task = s.str()?;
                spans[2] = s.last;
            }
            STEP => step = s.u64()?,
            EPISODE => episode = s.u64()?,
            EPISODE_STEP => episode_step = s.u64()?,
            REWARD => reward = s.f64()?,
            COMPONENTS => components = s.terms()?,
            PAYOUT => payout = s.terms()?,
            REGIME => regime = s.str()?,
            REGIME_ORIGIN => {
                origin = Origin::parse(s.str()?)?;
            }
            TERMINATED => terminated = s.bool()?,
            TRUNCATED => truncated = s.bool()?,
            CEILING => ceiling = s.nullable_f64()?,
            _ => return None,
        }
        if seen & (1 << bit) != 0 {
            return None;
        }
        seen |= 1 << bit;
        if s.end_field()? {
            break;
        }
        if in_order && bit == IDENTITY - 1 {
            prefix.bytes.clear();
            prefix.bytes.extend_from_slice(&line[..s.i]);
            prefix.seed = seed;
            prefix.spans = spans;
        }
    }
    s.ws();
    if s.i != text.len() || seen != ALL {
        return None;
    }
    Some(RowRef {
        run_id: Cow::Borrowed(run_id),
        seed,
        algorithm_id: Cow::Borrowed(algorithm_id),
        task: Cow::Borrowed(task),
        notify: notify.unwrap_or_default(),
        step,
        episode,
        episode_step,
        reward,
        components,
        payout,
        regime: Cow::Borrowed(regime),
        regime_origin: origin,
        terminated,
        truncated,
        ceiling,
        bound: bound.flatten(),
        role_rewards: role_rewards.unwrap_or_default(),
        _obs: None,
        _action: None,
    })
}

/// Fills an optional column's slot; `None` when the line already gave the column.
fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    slot.replace(value).is_none().then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serde_row(text: &str) -> Option<RowRef<'_>> {
        serde_json::from_str(text).ok()
    }

    const ROW: &str = r#"{"run_id":"r","seed":7,"algorithm_id":"a","task":"t","step":12,"episode":1,"episode_step":3,"reward":0.9805358363714054,"components":{"progress":1.040191854464891,"cost":-5e-3},"payout":{"bonus":10},"regime":"calm","regime_origin":"scheduled","terminated":true,"truncated":false,"ceiling":13.0}"#;

    #[test]
    fn scanner_reads_writer_rows_exactly_as_serde_does() {
        let fast = row(ROW.as_bytes(), &mut Prefix::default()).unwrap();
        assert_eq!(Some(fast.clone()), serde_row(ROW));
        assert!(matches!(fast.run_id, Cow::Borrowed(_)));
        let spaced = ROW.replace(',', " ,\t").replace(':', ": ");
        let fresh = || Prefix::default();
        assert_eq!(row(spaced.as_bytes(), &mut fresh()), serde_row(&spaced));
        let null_ceiling = ROW.replace("13.0", "null");
        let row = row(null_ceiling.as_bytes(), &mut fresh()).unwrap();
        assert_eq!(row.ceiling, None);
    }

    #[test]
    fn scanner_reuses_a_run_prefix_only_while_it_matches() {
        let mut prefix = Prefix::default();
        let rows = [
            ROW.to_string(),
            ROW.replace(r#""step":12"#, r#""step":13"#),
            ROW.replace(r#""run_id":"r""#, r#""run_id":"s""#),
            ROW.replace(r#""task":"t""#, r#""task":"tt""#),
            ROW.replace(r#""seed":7"#, r#""seed":8"#),
            ROW.replace(r#"{"run_id":"r","seed":7,"#, r#"{"seed":7,"run_id":"r","#),
            ROW.to_string(),
        ];
        for line in &rows {
            assert_eq!(row(line.as_bytes(), &mut prefix), serde_row(line), "{line}");
        }
    }

    #[test]
    fn scanner_leaves_everything_unusual_to_serde() {
        let cases = [
            ROW.replace(r#""r""#, r#""r\u00e9""#),
            ROW.replace(r#""step":12"#, r#""step":12.0"#),
            ROW.replace(r#""step":12"#, r#""step":012"#),
            ROW.replace(r#""reward":0.98"#, r#""reward":1e999"#),
            ROW.replace(r#""reward":0.98"#, r#""reward":null"#),
            ROW.replace(r#""seed":7,"#, ""),
            ROW.replace(r#""seed":7"#, r#""seed":7,"seed":7"#),
            ROW.replace(r#""ceiling""#, r#""obs":[1],"action":0,"ceiling""#),
            ROW.replace(r#""ceiling""#, r#""extra":1,"ceiling""#),
            ROW.replace("scheduled", "whenever"),
            format!("{ROW} x"),
        ];
        for case in &cases {
            let mut prefix = Prefix::default();
            assert!(row(ROW.as_bytes(), &mut prefix).is_some());
            assert!(row(case.as_bytes(), &mut prefix).is_none(), "{case}");
        }
        assert!(serde_row(&cases[0]).is_some());
        assert!(serde_row(&cases[7]).is_some());
        for case in &cases[1..7] {
            assert!(serde_row(case).is_none(), "{case}");
        }
    }
}
