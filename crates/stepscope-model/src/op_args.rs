//! The arguments a CPU op was called with, as the PyTorch profiler records them when
//! shapes are recorded (`record_shapes=True`): `Input Dims`, `Input type`, `Input Strides`
//! and `Concrete Inputs`, one entry per argument of the op.
//!
//! Each field is kept as the JSON text the trace holds (`[[8944, 1024], [1024, 2816]]`),
//! not parsed: a shapes-recorded trace holds millions of ops but only thousands of distinct
//! argument lists, and an efficiency pass parses each distinct list once. The lists are
//! interned whole in an [`OpArgsTable`]; a CPU op row holds an [`OpArgsId`].

use hashbrown::HashTable;
use rustc_hash::FxHasher;
use std::hash::Hasher;

/// One op's argument lists, each the JSON text of the trace's field (`None` when absent).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpArgs<'a> {
    /// `Input Dims`: the shape of each argument, `[]` for a non-tensor.
    pub input_dims: Option<&'a str>,
    /// `Input type`: each argument's dtype (`c10::BFloat16`, `float`, `Scalar`, ...).
    pub input_types: Option<&'a str>,
    /// `Input Strides`: each tensor argument's strides.
    pub input_strides: Option<&'a str>,
    /// `Concrete Inputs`: the values of scalar arguments (`'1'`, `'True'`), `''` for tensors.
    pub concrete_inputs: Option<&'a str>,
}

impl<'a> OpArgs<'a> {
    /// Whether no field is present.
    pub fn is_empty(&self) -> bool {
        self.fields().iter().all(Option::is_none)
    }

    fn fields(&self) -> [Option<&'a str>; 4] {
        [
            self.input_dims,
            self.input_types,
            self.input_strides,
            self.concrete_inputs,
        ]
    }

    fn from_fields(fields: [Option<&'a str>; 4]) -> Self {
        let [input_dims, input_types, input_strides, concrete_inputs] = fields;
        OpArgs {
            input_dims,
            input_types,
            input_strides,
            concrete_inputs,
        }
    }
}

/// A distinct argument list in an [`OpArgsTable`]; [`OpArgsId::NONE`] for an op recorded
/// without any.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpArgsId(u32);

impl OpArgsId {
    /// An op without argument lists.
    pub const NONE: OpArgsId = OpArgsId(0);

    /// Whether this is [`OpArgsId::NONE`].
    pub fn is_none(self) -> bool {
        self == Self::NONE
    }

    /// The id as an index into its table.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// Distinct argument lists, each stored once. Row 0 is the empty list ([`OpArgsId::NONE`]).
#[derive(Debug, Clone)]
pub struct OpArgsTable {
    rows: Vec<[Option<Box<str>>; 4]>,
    /// Row ids by the hash of their bytes: looked up with the bytes of the trace, so that a
    /// list seen before costs a hash and a compare (no key built, no UTF-8 check).
    lookup: HashTable<OpArgsId>,
}

impl Default for OpArgsTable {
    fn default() -> Self {
        let mut table = OpArgsTable {
            rows: Vec::new(),
            lookup: HashTable::new(),
        };
        table.intern(OpArgs::default());
        table
    }
}

impl OpArgsTable {
    /// The id of `args`, adding them when new; [`OpArgsId::NONE`] when every field is absent.
    pub fn intern(&mut self, args: OpArgs<'_>) -> OpArgsId {
        self.intern_bytes(args.fields().map(|field| field.map(str::as_bytes)))
    }

    /// [`Self::intern`] from the fields' bytes (`Input Dims`, `Input type`, `Input Strides`,
    /// `Concrete Inputs`): checked as UTF-8 only when new, and a field that is not UTF-8 is
    /// dropped.
    pub fn intern_bytes(&mut self, fields: [Option<&[u8]>; 4]) -> OpArgsId {
        let hash = hash_fields(&fields);
        let rows = &self.rows;
        if let Some(&id) = self
            .lookup
            .find(hash, |&id| row_is(&rows[id.index()], &fields))
        {
            return id;
        }
        let checked = fields.map(|field| field.and_then(|bytes| std::str::from_utf8(bytes).ok()));
        if checked
            .iter()
            .zip(&fields)
            .any(|(c, f)| c.is_none() != f.is_none())
        {
            return self.intern(OpArgs::from_fields(checked));
        }
        let index = u32::try_from(self.rows.len()).expect("more than u32::MAX argument lists");
        let id = OpArgsId(index);
        self.rows.push(checked.map(|field| field.map(Box::from)));
        let rows = &self.rows;
        self.lookup
            .insert_unique(hash, id, |&id| hash_fields(&row_bytes(&rows[id.index()])));
        id
    }

    /// The argument lists behind an id made by this table.
    pub fn get(&self, id: OpArgsId) -> OpArgs<'_> {
        let row = &self.rows[id.index()];
        OpArgs::from_fields([0, 1, 2, 3].map(|field| row[field].as_deref()))
    }

    /// Every list with its id, in id order (the empty one first).
    pub fn iter(&self) -> impl Iterator<Item = (OpArgsId, OpArgs<'_>)> {
        (0..self.rows.len()).map(|index| {
            let id = OpArgsId(index as u32);
            (id, self.get(id))
        })
    }

    /// Number of distinct lists, the empty one included.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Always false: the empty list is always there.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

fn row_bytes(row: &[Option<Box<str>>; 4]) -> [Option<&[u8]>; 4] {
    [0, 1, 2, 3].map(|field| row[field].as_deref().map(str::as_bytes))
}

fn row_is(row: &[Option<Box<str>>; 4], fields: &[Option<&[u8]>; 4]) -> bool {
    row_bytes(row) == *fields
}

/// The hash of four fields: per field whether it is there, its length and its bytes, so
/// that lists differing only in where one field ends hash apart.
fn hash_fields(fields: &[Option<&[u8]>; 4]) -> u64 {
    let mut hasher = FxHasher::default();
    for field in fields {
        match field {
            None => hasher.write_u8(0),
            Some(bytes) => {
                hasher.write_u8(1);
                hasher.write_usize(bytes.len());
                hasher.write(bytes);
            }
        }
    }
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_lists_share_an_id_and_come_back_as_written() {
        let mut table = OpArgsTable::default();
        let mm = OpArgs {
            input_dims: Some("[[8944, 1024], [1024, 2816]]"),
            input_types: Some("[\"c10::BFloat16\", \"c10::BFloat16\"]"),
            input_strides: None,
            concrete_inputs: Some("[\"\", \"\"]"),
        };
        let first = table.intern(mm);
        assert_eq!(table.intern(mm), first);
        assert!(!first.is_none());
        assert_eq!(table.get(first), mm);
        assert_eq!(table.intern(OpArgs::default()), OpArgsId::NONE);
        assert!(table.get(OpArgsId::NONE).is_empty());
        assert_eq!(table.len(), 2);
    }

    #[test]
    fn lists_that_differ_only_in_where_a_field_ends_are_different() {
        let mut table = OpArgsTable::default();
        let a = table.intern(OpArgs {
            input_dims: Some("ab"),
            input_types: Some("c"),
            ..OpArgs::default()
        });
        let b = table.intern(OpArgs {
            input_dims: Some("a"),
            input_types: Some("bc"),
            ..OpArgs::default()
        });
        let c = table.intern(OpArgs {
            input_types: Some("ab"),
            ..OpArgs::default()
        });
        assert_ne!(a, b);
        assert_ne!(a, c);
        assert_eq!(table.len(), 4);
    }

    #[test]
    fn a_list_that_is_not_utf8_is_dropped_and_the_rest_kept() {
        let mut table = OpArgsTable::default();
        let id = table.intern_bytes([Some(b"[[2]]"), Some(b"[\"\xff\"]"), None, None]);
        let kept = OpArgs {
            input_dims: Some("[[2]]"),
            ..OpArgs::default()
        };
        assert_eq!(table.get(id), kept);
        assert_eq!(table.intern(kept), id);
        assert_eq!(table.intern_bytes([None; 4]), OpArgsId::NONE);
    }

    #[test]
    fn many_lists_survive_the_table_growing() {
        let mut table = OpArgsTable::default();
        let texts: Vec<String> = (0..5000).map(|n| format!("[[{n}]]")).collect();
        let ids: Vec<OpArgsId> = texts
            .iter()
            .map(|t| table.intern_bytes([Some(t.as_bytes()), None, None, None]))
            .collect();
        for (text, id) in texts.iter().zip(ids) {
            assert_eq!(
                table.intern_bytes([Some(text.as_bytes()), None, None, None]),
                id
            );
            assert_eq!(table.get(id).input_dims, Some(text.as_str()));
        }
        assert_eq!(table.len(), 5001);
    }
}
