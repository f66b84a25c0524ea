//! hmac
