mod support {
    pub mod redis;
}
mod store;
