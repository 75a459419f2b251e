#include "report/page_text.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "record/run_record.h"
#include "util/format.h"

namespace recipebench {

bool is_http_url(const std::string& url) {
  const std::string lower = ascii_lower(url.substr(0, 8));
  size_t host = 0;
  if (lower.rfind("https://", 0) == 0)
    host = 8;
  else if (lower.rfind("http://", 0) == 0)
    host = 7;
  else
    return false;
  if (url.size() <= host || url[host] == '/') return false;
  for (unsigned char c : url)
    if (c <= 0x20 || c == 0x7f || c == '"' || c == '\'' || c == '<' || c == '>' || c == '\\' || c == '`') return false;
  return true;
}

std::string script_json(const Json& v) { return script_text(v.dump(-1, ' ', false, Json::error_handler_t::replace)); }

std::string script_text(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string base64(const std::string& bytes) {
  static const char* b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t v = 0;
    for (size_t j = 0; j < 3; ++j) v = v << 8 | (j < n ? static_cast<unsigned char>(bytes[i + j]) : 0u);
    for (size_t j = 0; j < 4; ++j) out += j <= n ? b64[(v >> (18 - 6 * j)) & 63] : '=';
  }
  return out;
}

std::string csp_hash_source(const std::string& text) {
  const std::string hex = sha256_hex(text);
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return "'sha256-" + base64(bytes) + "'";
}

std::string data_uri(const std::string& media_type, const std::string& bytes) {
  return "data:" + media_type + ";base64," + base64(bytes);
}

}  // namespace recipebench
