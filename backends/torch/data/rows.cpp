#include "data/rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "util/atomic_file.h"

namespace recipebench::train {

SyntheticRows::SyntheticRows(int64_t vocab_size, int64_t row_tokens, double ratio, uint64_t seed,
                             int64_t min_row_tokens)
    : vocab_(vocab_size),
      row_tokens_(row_tokens),
      min_row_tokens_(min_row_tokens <= 0 ? row_tokens : min_row_tokens),
      rng_(seed) {
  if (vocab_size < 2 || row_tokens < 2)
    throw std::invalid_argument("synthetic rows need vocab >= 2 and rows >= 2 tokens");
  if (min_row_tokens_ < 2 || min_row_tokens_ > row_tokens)
    throw std::invalid_argument("bench.data.min_row_tokens is " + std::to_string(min_row_tokens) + ", expected 2.." +
                                std::to_string(row_tokens) + " (workload.row_tokens)");
  supervised_ = std::clamp<int64_t>(std::llround(ratio * row_tokens), 0, row_tokens - 1);
  perm_.resize(vocab_);
  std::iota(perm_.begin(), perm_.end(), 0);
  std::shuffle(perm_.begin(), perm_.end(), rng_);
}

Rows SyntheticRows::next(int64_t n) {
  Rows r;
  r.rows = n;
  r.row_tokens = row_tokens_;
  r.tokens.resize(n * row_tokens_);
  r.mask.assign(n * row_tokens_, 0);
  std::uniform_int_distribution<int64_t> token(0, vocab_ - 1);
  // Segments of up to 32 tokens: a prompt of p tokens then a response of s tokens, s / (p + s) ~ ratio.
  const int64_t seg = std::min<int64_t>(32, row_tokens_);
  for (int64_t i = 0; i < n; ++i) {
    int64_t* t = &r.tokens[i * row_tokens_];
    uint8_t* m = &r.mask[i * row_tokens_];
    int64_t left_supervised = supervised_, pos = 0;
    while (pos < row_tokens_) {
      const int64_t len = std::min(seg, row_tokens_ - pos);
      const int64_t remaining = row_tokens_ - pos;
      // Response share of this segment, so that the row ends with exactly `supervised_` supervised tokens.
      int64_t s = std::llround(static_cast<double>(left_supervised) * len / remaining);
      s = std::clamp<int64_t>(s, 0, len - 1);
      const int64_t p = len - s;
      for (int64_t k = 0; k < p; ++k) t[pos + k] = token(rng_);
      for (int64_t k = p; k < len; ++k) {
        t[pos + k] = perm_[t[pos + k - 1]];
        m[pos + k] = 1;
      }
      left_supervised -= s;
      pos += len;
    }
    // Variable length: the row keeps its first `length` tokens, the rest is padding.
    int64_t length = row_tokens_;
    if (min_row_tokens_ < row_tokens_)
      length = std::uniform_int_distribution<int64_t>(min_row_tokens_, row_tokens_)(rng_);
    std::fill(t + length, t + row_tokens_, 0);
    std::fill(m + length, m + row_tokens_, 0);
    r.lengths.push_back(length);
  }
  return r;
}

namespace {

template <typename T>
T read_le(std::istream& in) {
  T v{};
  in.read(reinterpret_cast<char*>(&v), sizeof v);
  return v;
}

}  // namespace

FileRows::FileRows(const std::string& path, int64_t row_tokens, int64_t vocab_size) : row_tokens_(row_tokens) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error(path + ": cannot read the rows file");
  const auto size = static_cast<int64_t>(in.tellg());
  in.seekg(0);
  char magic[8] = {};
  in.read(magic, 8);
  if (size < 20 || std::memcmp(magic, "RBROWS01", 8) != 0)
    throw std::runtime_error(path +
                             ": not a recipebench rows file (found no RBROWS01 header), expected the format of "
                             "docs/data-format.md");
  const auto file_row_tokens = read_le<uint32_t>(in);
  const auto rows = read_le<uint64_t>(in);
  if (static_cast<int64_t>(file_row_tokens) != row_tokens)
    throw std::runtime_error(path + ": rows of " + std::to_string(file_row_tokens) + " tokens, expected " +
                             std::to_string(row_tokens) + " (workload.row_tokens)");
  if (rows == 0) throw std::runtime_error(path + ": 0 rows, expected at least 1");
  // The header's sizes against the file's, without overflow: a row takes row_tokens x 5 bytes after the 20-byte
  // header, so the body must hold exactly `rows` of them (a header declaring 2^57 rows is refused here, before
  // rows x row_tokens x 5 could wrap).
  if (row_tokens <= 0) throw std::runtime_error(path + ": rows of 0 tokens, expected at least 1");
  const uint64_t row_bytes = static_cast<uint64_t>(row_tokens) * 5;
  const uint64_t body = static_cast<uint64_t>(size) - 20;
  if (rows != body / row_bytes || body % row_bytes != 0) {
    const bool fits = rows <= (std::numeric_limits<uint64_t>::max() - 20) / row_bytes;
    throw std::runtime_error(path + ": size does not match the header: " + std::to_string(size) + " bytes, expected " +
                             (fits ? std::to_string(20 + rows * row_bytes) : std::string("more than 2^64")) + " for " +
                             std::to_string(rows) + " rows of " + std::to_string(row_tokens) + " tokens (20 + rows x " +
                             std::to_string(row_tokens) + " x 5 bytes)");
  }
  const int64_t cells = static_cast<int64_t>(rows) * row_tokens;  // <= the file's size: no overflow
  rows_ = static_cast<int64_t>(rows);
  tokens_.resize(cells);
  mask_.resize(cells);
  in.read(reinterpret_cast<char*>(tokens_.data()), cells * 4);
  in.read(reinterpret_cast<char*>(mask_.data()), cells);
  for (int64_t i = 0; i < cells; ++i) {
    if (tokens_[i] < 0 || tokens_[i] >= vocab_size)
      throw std::runtime_error(path + ": row " + std::to_string(i / row_tokens) + " token " +
                               std::to_string(i % row_tokens) + " has id " + std::to_string(tokens_[i]) +
                               ", expected 0.." + std::to_string(vocab_size - 1) + " (the model's vocabulary)");
    if (mask_[i] > 1)
      throw std::runtime_error(path + ": row " + std::to_string(i / row_tokens) + " mask byte " +
                               std::to_string(mask_[i]) + ", expected 0 or 1");
  }
}

Rows FileRows::next(int64_t n) {
  Rows r;
  r.rows = n;
  r.row_tokens = row_tokens_;
  r.tokens.resize(n * row_tokens_);
  r.mask.resize(n * row_tokens_);
  r.lengths.assign(n, row_tokens_);  // the file format has no padding marker: every row is full
  for (int64_t i = 0; i < n; ++i) {
    const int64_t src = (cursor_ + i) % rows_;
    std::copy_n(&tokens_[src * row_tokens_], row_tokens_, &r.tokens[i * row_tokens_]);
    std::copy_n(&mask_[src * row_tokens_], row_tokens_, &r.mask[i * row_tokens_]);
  }
  cursor_ = (cursor_ + n) % rows_;
  return r;
}

void write_rows_file(const std::string& path, const Rows& rows) {
  std::string out("RBROWS01", 8);
  const auto rt = static_cast<uint32_t>(rows.row_tokens);
  const auto n = static_cast<uint64_t>(rows.rows);
  out.append(reinterpret_cast<const char*>(&rt), 4);
  out.append(reinterpret_cast<const char*>(&n), 8);
  for (int64_t t : rows.tokens) {
    const auto v = static_cast<int32_t>(t);
    out.append(reinterpret_cast<const char*>(&v), 4);
  }
  out.append(reinterpret_cast<const char*>(rows.mask.data()), rows.mask.size());
  write_file_atomic(path, out);
}

}  // namespace recipebench::train
