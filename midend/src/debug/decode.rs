//! Reading a debug buffer back on the host: the records of a launch in program order, their
//! values formatted, and what was dropped. Pure: the driver prints.

use super::{DebugKind, DebugSite, HEADER_WORDS, RECORD_WORDS};
use crate::types::{Scalar, Type};

/// One `print` run or failed `assert` of a launch.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Its site, in `Module::debug`.
    pub site: u32,
    /// The program that ran it: its ids along the grid's axes (0 past the grid's rank).
    pub program: [u32; 3],
    /// `print`: each value formatted ([`format_value`]).
    pub values: Vec<String>,
}

/// What a launch's debug buffer holds.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DebugReport {
    /// The records that fitted, in program order: by program id (axis 0, then 1, then 2),
    /// then in the order the program ran them.
    pub records: Vec<Record>,
    /// Records that did not fit in the buffer.
    pub dropped: u64,
    /// `assert`s that failed (their records may be among the dropped).
    pub failed_asserts: u64,
}

impl DebugReport {
    /// The first failed `assert` in program order, if its record fitted.
    pub fn first_failure(&self, sites: &[DebugSite]) -> Option<&Record> {
        self.records.iter().find(|r| sites.get(r.site as usize).is_some_and(|s| s.kind == DebugKind::Assert))
    }
}

/// Decodes the debug buffer `words` of a launch of a kernel whose module has `sites`. A
/// malformed buffer (a site out of range) ends the records there; it never panics.
pub fn decode(sites: &[DebugSite], words: &[u32]) -> DebugReport {
    let word = |i: u32| words.get(i as usize).copied().unwrap_or(0);
    let reserved = u64::from(word(0));
    let end = (HEADER_WORDS as u64 + reserved).min(words.len() as u64);
    let mut records = Vec::new();
    let mut p = HEADER_WORDS as u64;
    while p + RECORD_WORDS as u64 <= end {
        let i = p as u32;
        let Some(site) = sites.get(word(i) as usize) else { break };
        let len = RECORD_WORDS as u64 + site.payload_words() as u64;
        if p + len > end {
            break;
        }
        let mut at = (p + RECORD_WORDS as u64) as usize;
        let values = site
            .values
            .iter()
            .map(|t| {
                let n = super::value_words(t) as usize;
                let v = format_value(t, &words[at..at + n]);
                at += n;
                v
            })
            .collect();
        records.push(Record { site: word(i), program: [word(i + 1), word(i + 2), word(i + 3)], values });
        p += len;
    }
    // A program's records were reserved in its order; programs interleave.
    records.sort_by_key(|r| r.program);
    let dropped = u64::from(word(1)).saturating_sub(records.len() as u64);
    DebugReport { records, dropped, failed_asserts: u64::from(word(2)) }
}

/// A printed value from its words (`super::value_words` of them): a scalar as Rust prints it
/// (`1.5`, `-0.0`, `NaN`, `inf`, `7`, `true`; floats in the shortest form that reads back as
/// the same value of their type), a tile as nested lists (`[[1.0, 2.0], [3.0, 4.0]]`).
pub fn format_value(t: &Type, words: &[u32]) -> String {
    let elem = t.elem();
    let n = t.tile_len().max(1) as usize;
    let one = |i: usize| -> String {
        let lo = words.get(i).copied().unwrap_or(0);
        let bits64 = || u64::from(lo) | u64::from(words.get(n + i).copied().unwrap_or(0)) << 32;
        match elem {
            Scalar::Bool => (lo != 0).to_string(),
            Scalar::I32 => (lo as i32).to_string(),
            Scalar::U32 => lo.to_string(),
            Scalar::F32 | Scalar::F16 | Scalar::BF16 => format!("{:?}", f32::from_bits(lo)),
            Scalar::I64 => (bits64() as i64).to_string(),
            Scalar::F64 => format!("{:?}", f64::from_bits(bits64())),
        }
    };
    match t {
        Type::Tile { shape, .. } if shape.len() == 2 => {
            let cols = shape[1] as usize;
            let rows: Vec<String> = (0..shape[0] as usize)
                .map(|r| format!("[{}]", (0..cols).map(|c| one(r * cols + c)).collect::<Vec<_>>().join(", ")))
                .collect();
            format!("[{}]", rows.join(", "))
        }
        Type::Tile { .. } => format!("[{}]", (0..n).map(one).collect::<Vec<_>>().join(", ")),
        _ => one(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Loc;

    fn site(kind: DebugKind, values: Vec<Type>) -> DebugSite {
        let value_locs = values.iter().map(|_| Loc::default()).collect();
        DebugSite { kind, text: "x".into(), loc: Loc::default(), values, value_locs }
    }

    #[test]
    fn values_format_as_rust_prints_them() {
        let f64t = Type::Scalar(Scalar::F64);
        let b = (-2.5f64).to_bits();
        assert_eq!(format_value(&f64t, &[b as u32, (b >> 32) as u32]), "-2.5");
        assert_eq!(format_value(&Type::Scalar(Scalar::I64), &[u32::MAX, u32::MAX]), "-1");
        assert_eq!(format_value(&Type::Scalar(Scalar::I32), &[u32::MAX]), "-1");
        assert_eq!(format_value(&Type::Scalar(Scalar::Bool), &[1]), "true");
        let m = Type::Tile { elem: Scalar::F32, shape: vec![2, 2] };
        let w: Vec<u32> = [1.0f32, 0.1, f32::NAN, -0.0].iter().map(|x| x.to_bits()).collect();
        assert_eq!(format_value(&m, &w), "[[1.0, 0.1], [NaN, -0.0]]");
        let v = Type::Tile { elem: Scalar::I64, shape: vec![2] };
        assert_eq!(format_value(&v, &[5, u32::MAX, 0, u32::MAX]), "[5, -1]");
    }

    #[test]
    fn records_come_in_program_order_and_drops_are_counted() {
        let sites = vec![site(DebugKind::Print, vec![Type::Scalar(Scalar::U32)]), site(DebugKind::Assert, vec![])];
        // Program 1's record reserved first, then program 0's, then program 1's assert; one
        // more record started but did not fit.
        let mut w = vec![15, 4, 1, 0];
        w.extend([0, 1, 0, 0, 11]);
        w.extend([0, 0, 0, 0, 10]);
        w.extend([1, 1, 0, 0]);
        let r = decode(&sites, &w);
        assert_eq!(r.records.iter().map(|r| (r.program[0], r.site)).collect::<Vec<_>>(), [(0, 0), (1, 0), (1, 1)]);
        assert_eq!(r.records[0].values, ["10"]);
        assert_eq!((r.dropped, r.failed_asserts), (1, 1));
        assert_eq!(r.first_failure(&sites).map(|r| r.program[0]), Some(1));
        // A bad site or a short buffer ends the records, without a panic.
        assert_eq!(decode(&sites, &[9, 1, 0, 0, 7, 0, 0, 0]).records, []);
        assert_eq!(decode(&sites, &[u32::MAX, 0, 0, 0, 0, 0]).records, []);
    }
}
