//! redis
