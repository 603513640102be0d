//! String interning: each distinct name is stored once.

use crate::NameId;
use rustc_hash::FxHashMap;

/// An append-only string table.
#[derive(Debug, Default, Clone)]
pub struct Interner {
    strings: Vec<Box<str>>,
    lookup: FxHashMap<Box<str>, NameId>,
}

impl Interner {
    /// The id of `name`, adding it when new.
    pub fn intern(&mut self, name: &str) -> NameId {
        if let Some(&id) = self.lookup.get(name) {
            return id;
        }
        let id = NameId::from_index(self.strings.len());
        self.strings.push(name.into());
        self.lookup.insert(name.into(), id);
        id
    }

    /// The id of `name` if it was interned.
    pub fn get(&self, name: &str) -> Option<NameId> {
        self.lookup.get(name).copied()
    }

    /// The string behind an id.
    pub fn resolve(&self, id: NameId) -> &str {
        &self.strings[id.index()]
    }

    /// Number of distinct names.
    pub fn len(&self) -> usize {
        self.strings.len()
    }

    /// Whether no name was interned.
    pub fn is_empty(&self) -> bool {
        self.strings.is_empty()
    }

    /// Every name with its id, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (NameId, &str)> {
        self.strings
            .iter()
            .enumerate()
            .map(|(i, s)| (NameId::from_index(i), &**s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_is_stable() {
        let mut names = Interner::default();
        let a = names.intern("gemm");
        let b = names.intern("attn");
        assert_eq!(names.intern("gemm"), a);
        assert_ne!(a, b);
        assert_eq!(names.resolve(b), "attn");
        assert_eq!(names.len(), 2);
    }
}
