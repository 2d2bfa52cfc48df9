//! Sets and maps built one insert at a time: collecting into a B-tree sorts first, and every
//! sort of another type is code of its own that each WebAssembly module carries.

use std::collections::{BTreeMap, BTreeSet};

/// The items, ordered: inserted one by one, since collecting into a B-tree sorts first, and every
/// sort of another type is code of its own that each WebAssembly module carries.
pub(crate) fn ordered<T: Ord>(items: impl IntoIterator<Item = T>) -> BTreeSet<T> {
    let mut set = BTreeSet::new();
    for item in items {
        set.insert(item);
    }
    set
}

/// The pairs, by key (the last of a key wins), inserted one by one as [`ordered`] says why.
pub(crate) fn ordered_map<K: Ord, V>(pairs: impl IntoIterator<Item = (K, V)>) -> BTreeMap<K, V> {
    let mut map = BTreeMap::new();
    for (k, v) in pairs {
        map.insert(k, v);
    }
    map
}
