//! redis
pub struct RedisStore;
