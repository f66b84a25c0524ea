mod support {
    pub mod redis;
}
mod delivery_kit;
mod dlq;
mod ordering;
mod queue;
mod store;
