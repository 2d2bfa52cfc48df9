//! Resource limits that keep hostile input from exhausting memory or stack.

/// Bounds applied while reading input; every one of them fails with a clear error, never a crash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest input accepted, in bytes.
    pub max_input_bytes: usize,
    /// Deepest nesting of YAML collections.
    pub max_depth: usize,
    /// Most YAML nodes in one parse, counting every alias expansion.
    pub max_nodes: usize,
    /// Most resources in one input.
    pub max_items: usize,
    /// Most YAML nodes that aliases may add in one parse (Kubernetes YAML rarely uses aliases at all).
    pub max_alias_nodes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_input_bytes: 512 * 1024 * 1024,
            max_depth: 200,
            max_nodes: 20_000_000,
            max_items: 1_000_000,
            max_alias_nodes: 100_000,
        }
    }
}
