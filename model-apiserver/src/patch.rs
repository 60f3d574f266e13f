//! Patch application: JSON merge patch (RFC 7386) and JSON patch (RFC 6902, with `test`).
//! Strategic merge patch and server-side apply live in their own modules once built; until then
//! they answer 415 UnsupportedMediaType.
