// ShellExecutor: runs parsed `tessera shell` commands (shell_parser.h) against a Bigtable-API
// server through a BigtableClient, printing results to `out` (shell_format.h). Errors are
// returned, not printed: the caller prefixes and reports them.
//
// It caches each table's schema (one GetTable per table per session, refreshed when a family
// named in a command is missing, and dropped when the shell itself changes the table), because
// columns are resolved against family kinds (shell_schema.h).
//
// Long reads (scan, count) stop early when `*interrupted` becomes true (Ctrl-C), returning
// Cancelled — within ~50 ms even while the server sends nothing (a helper thread watches the
// flag during the read and cancels the call). They report progress on `err` when enabled.
//
// Thread-safety: one thread at a time.
#pragma once

#include <atomic>
#include <functional>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "tessera/cli/shell_parser.h"
#include "tessera/cli/shell_schema.h"
#include "tessera/client/bigtable_client.h"

namespace tessera::cli::shell {

struct ExecutorOptions {
  TimeFormat time_format = TimeFormat::kIso;
  // Print "(N rows)" after scans: useful for people, noise for scripts.
  bool print_row_counts = false;
  // Draw progress on `err` for scans (only sensible when stdout is not the same terminal) and
  // counts.
  bool scan_progress = false;
  bool count_progress = false;
};

class ShellExecutor {
 public:
  // `client`, `out`, `err` and `interrupted` (may be null) must outlive the executor.
  ShellExecutor(client::BigtableClient* client, ExecutorOptions options, std::FILE* out,
                std::FILE* err, const std::atomic<bool>* interrupted);

  // Runs one command. A `quit` sets quit_requested().
  Status Execute(const Command& command);
  bool quit_requested() const { return quit_; }

  // For completion: table ids (cached for a few seconds) and a table's family names; empty on
  // any error.
  std::vector<std::string> TableNames();
  std::vector<std::string> FamilyNames(const std::string& table);

 private:
  // The table's schema, from the cache or the server.
  StatusOr<const TableInfo*> Schema(const std::string& table);
  // Resolves `ref`, refreshing a cached schema once if the family is missing from it.
  StatusOr<ResolvedColumn> Resolve(const std::string& table, const ColumnRef& ref, bool for_write);
  StatusOr<std::optional<google::bigtable::v2::RowFilter>> ReadFilter(const Command& c);
  void Forget(const std::string& table) { schemas_.erase(table); }
  bool Interrupted() const { return interrupted_ != nullptr && interrupted_->load(); }

  // Reads every row of `options` into `on_row`, with progress and interruption.
  Status StreamRows(const Command& c, const client::ReadRowsOptions& options, bool progress,
                    const std::function<void(const model::Row&)>& on_row, int64_t* rows);

  Status Help(const Command& c);
  Status Ls();
  Status Describe(const Command& c);
  Status CreateTable(const Command& c);
  Status CreateFamily(const Command& c);
  Status Put(const Command& c);
  Status Get(const Command& c);
  Status Scan(const Command& c);
  Status Delete(const Command& c);
  Status Count(const Command& c);
  Status Truncate(const Command& c);
  Status Increment(const Command& c);
  Status Append(const Command& c);

  void Print(std::string_view text);

  client::BigtableClient* const client_;
  const ExecutorOptions options_;
  std::FILE* const out_;
  std::FILE* const err_;
  const std::atomic<bool>* const interrupted_;

  std::map<std::string, TableInfo, std::less<>> schemas_;
  std::vector<std::string> table_names_;
  std::chrono::steady_clock::time_point table_names_time_;
  bool quit_ = false;
};

// An error from Execute() as the shell prints it, code first: "NOT_FOUND: table ... not
// found". (Parse errors are printed bare: their messages already name the command.)
std::string DescribeError(const Status& status);

}  // namespace tessera::cli::shell
