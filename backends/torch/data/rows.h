// Training rows: token ids with a loss mask, from a seeded synthetic generator or a pre-tokenized file.
// No libtorch here: rows are plain vectors, turned into tensors by the backend.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace recipebench::train {

/// A batch of rows: tokens and mask are row-major [rows, row_tokens]. mask[i] = 1 where token i is supervised
/// (the loss counts predicting it from the tokens before it). lengths[r] (tokens) is row r's length before its
/// padding: tokens from there to row_tokens are padding (token 0, mask 0), which dynamic batching drops.
struct Rows {
  int64_t rows = 0, row_tokens = 0;
  std::vector<int64_t> tokens;
  std::vector<uint8_t> mask;
  std::vector<int64_t> lengths;
};

/// A source of rows. next(n) returns the next n rows; the sequence is deterministic for a given seed or file.
class RowSource {
 public:
  virtual ~RowSource() = default;
  virtual Rows next(int64_t n) = 0;
};

/// Synthetic SFT-like rows with structure a model can learn: each row alternates prompt segments of uniform random
/// tokens and response segments where token t = perm[token t-1] for a fixed random permutation `perm` of the
/// vocabulary; response tokens are supervised. Segment lengths are chosen so that the supervised fraction of a
/// row is round(supervised_token_ratio x row_tokens) / row_tokens. A model that learns `perm` drives the loss
/// from ln(vocab) towards 0. With min_row_tokens < row_tokens (bench.data.min_row_tokens), each row's length is
/// drawn uniformly from [min_row_tokens, row_tokens] and the rest of the row is padding; 0 (or row_tokens) gives
/// full rows and leaves the token sequence as without the option.
class SyntheticRows : public RowSource {
 public:
  SyntheticRows(int64_t vocab_size, int64_t row_tokens, double supervised_token_ratio, uint64_t seed,
                int64_t min_row_tokens = 0);
  Rows next(int64_t n) override;

 private:
  int64_t vocab_, row_tokens_, supervised_, min_row_tokens_;
  std::mt19937_64 rng_;
  std::vector<int64_t> perm_;
};

/// Pre-tokenized rows read from a file in the recipebench rows format (docs/data-format.md):
///   bytes 0..7   magic "RBROWS01"
///   uint32 LE    row_tokens
///   uint64 LE    rows
///   int32 LE     tokens[rows x row_tokens]
///   uint8        mask[rows x row_tokens]   (0 or 1)
/// Rows are served in order and wrap around at the end. The constructor checks the magic, the row length against
/// `row_tokens`, the file size, every token id against `vocab_size` and every mask byte, and throws
/// std::runtime_error naming the file, what was found and what was expected.
class FileRows : public RowSource {
 public:
  FileRows(const std::string& path, int64_t row_tokens, int64_t vocab_size);
  Rows next(int64_t n) override;
  int64_t rows() const { return rows_; }

 private:
  int64_t row_tokens_ = 0, rows_ = 0, cursor_ = 0;
  std::vector<int32_t> tokens_;
  std::vector<uint8_t> mask_;
};

/// Writes rows in the format FileRows reads (atomically). Throws std::runtime_error on I/O failure.
void write_rows_file(const std::string& path, const Rows& rows);

}  // namespace recipebench::train
