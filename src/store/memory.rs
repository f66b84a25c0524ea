//! memory
pub struct MemoryStore;
