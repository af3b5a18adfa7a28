//! Blanking credentials out of text that came from outside: provider error bodies,
//! transport errors, stream error events.
//!
//! Such text reaches the ledger, the log and sometimes the client (DESIGN §7: keys are never
//! logged or stored), and providers echo what they were sent: OpenAI's 401 quotes the masked
//! key, a connection error quotes the URL with its query (where some gateways take the key)
//! and its userinfo. The caller knows the key it sent only sometimes, so this works from the
//! shape of a credential instead, and every such text goes through this one function.

use crate::Secret;

/// Characters a key, token or encoded blob is made of (base64, base64url, hex, and the `*`
/// of a masked key).
fn is_keyish(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '/' | '=' | '*')
}

/// Characters of a bearer token (RFC 6750 `b64token`, which JWTs' dots also fit).
fn is_token_char(c: char) -> bool {
    is_keyish(c) || matches!(c, '.' | '~')
}

/// Characters that end a URL written in prose or a debug string.
fn ends_url(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '"' | '\'' | '<' | '>' | '(' | ')' | '[' | ']' | '{' | '}' | '`' | '\\'
        )
}

/// Runs of key characters at least this long are taken for a credential or a blob that may
/// hold one (32 hex characters is 128 bits, the least any provider's key carries).
const MIN_BLOB_CHARS: usize = 32;

/// `text` with every credential-shaped part replaced by [`Secret::REDACTED`]:
///
/// - in a URL (`scheme://…`), the userinfo, query and fragment are dropped;
/// - the token after `Bearer`;
/// - any word starting `sk-` or `sk_` (OpenAI, Anthropic `sk-ant-…`, masked `sk-proj-***ab`);
/// - any run of 32 or more base64/hex characters mixing two of lower case, upper case and
///   digits (single-class runs are words, numbers or `snake_case` names, not keys).
///
/// Ordinary messages come back unchanged, so the provider's meaning survives.
pub fn redact_credentials(text: &str) -> String {
    redact_words(&strip_urls(text))
}

/// Drops the userinfo, query and fragment of every URL in `text`.
fn strip_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let scheme_start = rest[..at]
            .char_indices()
            .rev()
            .take_while(|&(_, c)| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'))
            .last()
            .map_or(at, |(i, _)| i);
        let url_end = rest[at + 3..]
            .find(ends_url)
            .map_or(rest.len(), |end| at + 3 + end);
        out.push_str(&rest[..at + 3]);
        if scheme_start == at {
            // Not a URL (`://` with no scheme); keep going after it.
            rest = &rest[at + 3..];
            continue;
        }
        let after_scheme = &rest[at + 3..url_end];
        let authority_end = after_scheme
            .find(['/', '?', '#'])
            .unwrap_or(after_scheme.len());
        let (authority, path) = after_scheme.split_at(authority_end);
        let host = authority
            .rsplit_once('@')
            .map_or(authority, |(_, host)| host);
        let path = path.split(['?', '#']).next().unwrap_or("");
        out.push_str(host);
        out.push_str(path);
        rest = &rest[url_end..];
    }
    out.push_str(rest);
    out
}

/// Replaces the credential-shaped words of `text` (see [`redact_credentials`]).
fn redact_words(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if !is_keyish(c) {
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let end = rest.find(|c: char| !is_keyish(c)).unwrap_or(rest.len());
        let (word, after) = rest.split_at(end);
        if is_key_shaped(word) {
            out.push_str(Secret::REDACTED);
        } else {
            out.push_str(word);
        }
        rest = after;
        if word.eq_ignore_ascii_case("bearer")
            && let Some((spaces, after_token)) = bearer_token(after)
        {
            out.push_str(spaces);
            out.push_str(Secret::REDACTED);
            rest = after_token;
        }
    }
    out
}

/// The blanks before the token and what follows the token, when `after` (the text after the word `Bearer`)
/// holds a token. Prose ("Bearer tokens are not accepted") does not: a token is at least
/// 16 characters, or carries a digit or a symbol.
fn bearer_token(after: &str) -> Option<(&str, &str)> {
    let token_start = after.len() - after.trim_start_matches([' ', '\t']).len();
    let (spaces, rest) = after.split_at(token_start);
    let token_end = rest.find(|c: char| !is_token_char(c)).unwrap_or(rest.len());
    let (token, after_token) = rest.split_at(token_end);
    let is_token = token.len() >= 16 || token.chars().any(|c| !c.is_ascii_alphabetic());
    (!spaces.is_empty() && !token.is_empty() && is_token).then_some((spaces, after_token))
}

/// Whether one run of key characters looks like a credential.
fn is_key_shaped(word: &str) -> bool {
    let prefixed = ["sk-", "sk_"]
        .iter()
        .any(|prefix| word.len() > prefix.len() && word.starts_with(prefix));
    if prefixed {
        return true;
    }
    if word.len() < MIN_BLOB_CHARS {
        return false;
    }
    let classes = [
        word.bytes().any(|b| b.is_ascii_lowercase()),
        word.bytes().any(|b| b.is_ascii_uppercase()),
        word.bytes().any(|b| b.is_ascii_digit()),
    ];
    classes.into_iter().filter(|&present| present).count() >= 2
}

#[cfg(test)]
mod tests;
