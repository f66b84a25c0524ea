//! Standard Webhooks (and Svix): `webhook-id`, `webhook-timestamp`,
//! `webhook-signature: v1,<base64> …`, signed bytes `{id}.{ts}.{body}`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;

use crate::config::secret::Secret;

/// Secrets are `whsec_` + base64 of the key bytes; the prefix is optional.
pub(super) fn prepare_key(secret: &Secret) -> Result<Secret, String> {
    let raw = secret.expose();
    let b64 = raw.strip_prefix(b"whsec_").unwrap_or(raw);
    match B64.decode(b64) {
        Ok(key) if !key.is_empty() => Ok(Secret::new(key)),
        Ok(_) => Err("secret decodes to an empty key".to_owned()),
        Err(_) => Err("secret is not whsec_ followed by base64".to_owned()),
    }
}
