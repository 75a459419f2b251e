// Text that goes into the leaderboard page from inputs (recipes, run records): what may become a link, and JSON
// that is safe inside an inline <script> element (docs/report.md, "Safety of the page").
#pragma once

#include <string>

#include "util/json.h"

namespace recipebench {

/// True when `url` may be rendered as a link: it starts with "http://" or "https://" (any letter case), has a
/// host after the scheme, and holds no whitespace, control character, quote or angle bracket. Anything else
/// (javascript:, data:, vbscript:, relative paths, " javascript:" with a leading space) is shown as text.
bool is_http_url(const std::string& url);

/// `v` as JSON text with '<', '>' and '&' written as \u003c, \u003e, \u0026, so that no input can close the
/// <script type="application/json"> element holding it or open a comment in it.
std::string script_json(const Json& v);

/// JSON text already written (e.g. by parts, with Json::dump) made safe the same way as script_json.
std::string script_text(const std::string& json_text);

/// `bytes` in base64 (RFC 4648, section 4: the + / alphabet, '=' padding).
std::string base64(const std::string& bytes);

/// A data: URI of `bytes` (RFC 2397), base64: "data:<media_type>;base64,...". The page's Download link of a recipe
/// whose YAML it shows: a download Chromium gives byte for byte, also from a page opened as a file.
std::string data_uri(const std::string& media_type, const std::string& bytes);

/// The Content-Security-Policy source of an inline element's text: "'sha256-<base64 of its SHA-256>'"
/// (CSP Level 2, hash-source), so that only the report's own script and style run.
std::string csp_hash_source(const std::string& text);

}  // namespace recipebench
