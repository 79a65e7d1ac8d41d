//! Image parts of every dialect, as the engine's images: inline data only. An http(s) URL is
//! refused, naming why (the server fetches nothing: it has no policy for what it may reach), and
//! so is anything that is not an image. Only the new user message's images reach the agent, as
//! ACP `image` blocks when the agent takes them (`backend/acp/backend.rs`); the backend
//! refuses them otherwise (print mode: text only).

use crate::http::errors::ApiError;
use crate::vocab::Image;

/// A `data:image/…;base64,…` URL (OpenAI's `image_url`, Responses' `input_image`).
pub fn from_url(url: &str, at: &str) -> Result<Image, ApiError> {
    let lower = url.trim_start().to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return Err(ApiError::bad_request(
            "Image URLs are not fetched: cursor-bridge reaches no network address for a request. Send the image \
             inline, as a data URL (`data:image/png;base64,…`).",
        )
        .param(at)
        .code("image_url_not_supported"));
    }
    let Some((head, data)) = url.trim().strip_prefix("data:").and_then(|rest| rest.split_once(',')) else {
        return Err(ApiError::bad_request("An image must be a data URL (`data:image/png;base64,…`).").param(at));
    };
    let Some(mime) = head.strip_suffix(";base64") else {
        return Err(ApiError::bad_request("An image data URL must be base64 (`data:image/png;base64,…`).").param(at));
    };
    from_base64(mime, data, at)
}

/// Base64 data of a media type (Anthropic's `image` source, and the data URL's parts).
pub fn from_base64(mime: &str, data: &str, at: &str) -> Result<Image, ApiError> {
    Image::checked(mime, data).map_err(|why| ApiError::bad_request(why).param(at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_urls_are_images_and_web_urls_are_refused() {
        let i = from_url("data:image/png;base64,iVBORw0KGgo=", "x").unwrap();
        assert_eq!((i.mime_type.as_str(), i.data.as_str()), ("image/png", "iVBORw0KGgo="));
        let e = from_url("https://example.com/cat.png", "messages[0].content[1].image_url").unwrap_err();
        assert_eq!(e.code.as_deref(), Some("image_url_not_supported"));
        assert!(e.message.contains("not fetched") && e.message.contains("data URL"), "{}", e.message);
        assert_eq!(e.param.as_deref(), Some("messages[0].content[1].image_url"));
        for bad in ["data:text/plain;base64,aGk=", "data:image/png,rawbytes", "cat.png", "data:image/png;base64,@@"] {
            assert_eq!(from_url(bad, "x").unwrap_err().status.as_u16(), 400, "{bad}");
        }
        assert!(from_base64("image/JPEG", "/9j/4AAQ", "x").is_ok());
    }
}
