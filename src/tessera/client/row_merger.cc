#include "tessera/client/row_merger.h"

#include <algorithm>
#include <utility>

namespace tessera::client {

namespace v2 = google::bigtable::v2;

namespace {

// At most this much is reserved up front for a split value on the word of value_size.
constexpr int64_t kMaxReserveBytes = 16 << 20;

// A key for an error message: printable ASCII kept, other bytes as \xNN, cut at 64 bytes.
std::string Printable(std::string_view key) {
  std::string out = "\"";
  for (size_t i = 0; i < key.size() && i < 64; ++i) {
    const auto ch = static_cast<unsigned char>(key[i]);
    if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\') {
      out += static_cast<char>(ch);
    } else {
      out += fmt::format("\\x{:02x}", ch);
    }
  }
  if (key.size() > 64) out += "...";
  return out + "\"";
}

}  // namespace

Status RowMerger::Fail(std::string_view rule) {
  status_ = absl::InternalError(StrCat("ReadRows stream: ", rule));
  return status_;
}

Status RowMerger::CheckKeyOrder(const std::string& key, bool allow_equal) {
  if (!have_last_key_) return absl::OkStatus();
  const int c = key.compare(last_key_);
  if (c == 0 && !allow_equal) {
    return Fail(
        StrCat("row key ", Printable(key), " came again after it was committed or scanned"));
  }
  if ((c < 0 && !reversed_) || (c > 0 && reversed_)) {
    return Fail(StrCat("row keys must be strictly ", reversed_ ? "decreasing" : "increasing",
                       ", but ", Printable(key), " came after ", Printable(last_key_)));
  }
  return absl::OkStatus();
}

Status RowMerger::AddChunk(const v2::ReadRowsResponse::CellChunk& c) {
  if (c.value_size() < 0) {
    return Fail(StrCat("value_size must not be negative, got ", c.value_size()));
  }
  if (c.reset_row()) {
    const bool has_data = !c.row_key().empty() || c.has_family_name() || c.has_qualifier() ||
                          c.timestamp_micros() != 0 || c.labels_size() > 0 || !c.value().empty() ||
                          c.value_size() != 0;
    if (has_data) {
      return Fail(
          "a reset_row chunk must carry no row_key, family_name, qualifier, timestamp, labels, "
          "value or value_size");
    }
    if (!in_row_) return Fail("reset_row with no row in progress");
    in_row_ = false;
    in_split_cell_ = false;
    row_ = model::Row();
    return absl::OkStatus();
  }

  if (!in_row_) {
    if (c.row_key().empty()) return Fail("the first chunk of a row must set row_key");
    if (!c.has_family_name()) {
      return Fail(
          StrCat("the first chunk of row ", Printable(c.row_key()), " must set family_name"));
    }
    if (!c.has_qualifier()) {
      return Fail(StrCat("the first chunk of row ", Printable(c.row_key()), " must set qualifier"));
    }
    RETURN_IF_ERROR(CheckKeyOrder(c.row_key(), /*allow_equal=*/false));
    in_row_ = true;
    row_ = model::Row();
    row_.key = c.row_key();
  } else if (in_split_cell_) {
    if (!c.row_key().empty() || c.has_family_name() || c.has_qualifier() ||
        c.timestamp_micros() != 0 || c.labels_size() > 0) {
      return Fail(
          "a chunk continuing a split value must not set row_key, family_name, qualifier, "
          "timestamp_micros or labels");
    }
  } else {
    if (!c.row_key().empty() && c.row_key() != row_.key) {
      return Fail(StrCat("a commit is required between row keys: ", Printable(c.row_key()),
                         " came inside uncommitted row ", Printable(row_.key)));
    }
    if (c.has_family_name() && !c.has_qualifier()) {
      return Fail(
          StrCat("family_name \"", c.family_name().value(), "\" was set without a qualifier"));
    }
  }

  if (!in_split_cell_) {
    // Every chunk that does not continue a split value starts a new cell.
    if (c.has_family_name()) family_ = c.family_name().value();
    if (c.has_qualifier()) qualifier_ = c.qualifier().value();
    model::Cell cell;
    cell.family = family_;
    cell.qualifier = qualifier_;
    cell.timestamp_micros = c.timestamp_micros();
    cell.labels.assign(c.labels().begin(), c.labels().end());
    if (c.value_size() > 0) {
      cell.value.reserve(static_cast<size_t>(std::min<int64_t>(c.value_size(), kMaxReserveBytes)));
      in_split_cell_ = true;
      split_value_size_ = c.value_size();
    }
    cell.value.append(c.value());
    row_.cells.push_back(std::move(cell));
  } else {
    if (c.value_size() > 0 && c.value_size() != split_value_size_) {
      return Fail(StrCat("value_size changed from ", split_value_size_, " to ", c.value_size(),
                         " within one split cell"));
    }
    row_.cells.back().value.append(c.value());
  }

  if (in_split_cell_) {
    const auto have = static_cast<int64_t>(row_.cells.back().value.size());
    if (have > split_value_size_) {
      return Fail(StrCat("a split value grew to ", have, " bytes, past its value_size ",
                         split_value_size_));
    }
    if (c.value_size() == 0) {  // the split value's last chunk
      if (have != split_value_size_) {
        return Fail(StrCat("a split value ended with ", have, " bytes, but value_size said ",
                           split_value_size_));
      }
      in_split_cell_ = false;
    }
  }

  if (c.commit_row()) {
    if (c.value_size() > 0) return Fail("commit_row on a chunk with value_size > 0");
    last_key_ = row_.key;
    have_last_key_ = true;
    ready_.push_back(std::move(row_));
    row_ = model::Row();
    in_row_ = false;
  }
  return absl::OkStatus();
}

Status RowMerger::Add(const v2::ReadRowsResponse& response) {
  if (!status_.ok()) return status_;
  for (const auto& chunk : response.chunks()) RETURN_IF_ERROR(AddChunk(chunk));
  if (!response.last_scanned_row_key().empty()) {
    if (in_row_) {
      return Fail(StrCat("last_scanned_row_key ", Printable(response.last_scanned_row_key()),
                         " came inside uncommitted row ", Printable(row_.key)));
    }
    // The last committed row may itself be the last one scanned.
    RETURN_IF_ERROR(CheckKeyOrder(response.last_scanned_row_key(), /*allow_equal=*/true));
    last_key_ = response.last_scanned_row_key();
    have_last_key_ = true;
  }
  return absl::OkStatus();
}

Status RowMerger::Finish() {
  if (!status_.ok()) return status_;
  if (in_row_) {
    return Fail(StrCat("the stream ended inside uncommitted row ", Printable(row_.key)));
  }
  return absl::OkStatus();
}

model::Row RowMerger::TakeRow() {
  model::Row row = std::move(ready_.front());
  ready_.pop_front();
  return row;
}

}  // namespace tessera::client
