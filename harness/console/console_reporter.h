// The console's view of a run: the header, one table row per step, the window's summary or the failure.
#pragma once

#include <cstdio>
#include <string>

#include "console/reporter.h"

namespace recipebench {

/// Prints progress to `out` (stdout) and messages to `err` (stderr), flushing after each line so that a
/// watching user (or a launcher collecting the ranks' output) sees every step as it ends.
class ConsoleReporter : public RunReporter {
 public:
  explicit ConsoleReporter(std::FILE* out = stdout, std::FILE* err = stderr) : out_(out), err_(err) {}
  void message(const std::string& line) override;
  void dry_run(const std::string& text) override;
  void start(const RunRecord& record) override;
  void model_built(const ModelBuild& build) override;
  void step(const StepSample& sample, const RunRecord& record, int devices) override;
  void finish(const RunRecord& record, const std::string& record_path, bool failure_shown) override;

 private:
  std::FILE* out_;
  std::FILE* err_;
  bool header_shown_ = false;  ///< the step table's header, printed before its first row (after the memory plan)
};

/// "4 of 40 layers" for a proxy with fewer layers than the model; "6 layers; the model has 4" for more; "layers not
/// known: stated counts" when the model is known by its stated counts only (full_layers 0).
std::string depth_label(int64_t run_layers, int64_t full_layers);

}  // namespace recipebench
