//! shopify
