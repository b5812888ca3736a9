// VersionEdit encoding: a sequence of fields, each a varint32 tag followed by its value. The
// fields of an edit appear in the order below; lists repeat their tag once per element. Decoding
// accepts any order (a repeated scalar keeps the last value).
//
//   tag  field              value
//   1    next_file_number   varint64
//   2    last_sequence      varint64
//   3    comparator         length-prefixed bytes
//   4    tablet             varint64 tablet_id, length-prefixed descriptor
//   5    removed tablet     varint64 tablet_id
//   6    new file           varint64 tablet_id, varint64 number, varint64 size,
//                           length-prefixed smallest, length-prefixed largest,
//                           varint64 min_sequence, varint64 max_sequence,
//                           varint64 num_entries, varint32 group
//   7    deleted file       varint64 tablet_id, varint64 file_number
//   8    flushed            varint64 tablet_id, varint64 flushed_sequence
//   9    data state         varint64 tablet_id, varint32 state (added after the others: a
//                           manifest without it is read with every tablet in state 0)
//   10   drop marks         varint64 tablet_id, varint32 count, then count times
//                           length-prefixed name, varint64 sequence (names strictly
//                           increasing); replaces the tablet's marks
//   11   tablet sequences   no value: the engine numbers each tablet on its own (a manifest
//                           without it was written with one node-wide counter, last_sequence)
//   12   replica epoch      varint64 tablet_id, varint64 epoch (added with replication: a
//                           manifest without it is read with every tablet at epoch 0)
//   13   replay from        varint64 tablet_id, varint64 segment (added with tablet rebuilds:
//                           a manifest without it replays every segment of every tablet)
//   14   new file at level  as 6, then varint32 level; written instead of 6 for a file of
//                           level > 0 (added with leveled compaction: a manifest whose files are
//                           all at level 0 is the same as before)
//   15   new file, timed    as 6, then varint32 level (any), then varint64 max_timestamp (the
//                           int64's bits); written instead of 6 and 14 whenever the newest cell
//                           timestamp is known (a file of an older manifest has it unknown)
//
// Tag 0 and any tag not listed are DataLoss: there is no way to skip a field of unknown size.
#include "tessera/storage/version_edit.h"

#include "absl/strings/escaping.h"
#include "tessera/util/coding.h"

namespace tessera::storage {
namespace {

enum Tag : uint32_t {
  kNextFileNumber = 1,
  kLastSequence = 2,
  kComparator = 3,
  kTablet = 4,
  kRemovedTablet = 5,
  kNewFile = 6,
  kDeletedFile = 7,
  kFlushed = 8,
  kDataState = 9,
  kDropMarks = 10,
  kTabletSequences = 11,
  kReplicaEpoch = 12,
  kReplayFrom = 13,
  kNewFileAtLevel = 14,
  kNewFileTimed = 15,
};

bool GetString(std::string_view* in, std::string* out) {
  std::string_view v;
  if (!GetLengthPrefixed(in, &v)) return false;
  out->assign(v.data(), v.size());
  return true;
}

bool GetFileMeta(std::string_view* in, FileMeta* f) {
  return GetVarint64(in, &f->number) && GetVarint64(in, &f->size) && GetString(in, &f->smallest) &&
         GetString(in, &f->largest) && GetVarint64(in, &f->min_sequence) &&
         GetVarint64(in, &f->max_sequence) && GetVarint64(in, &f->num_entries) &&
         GetVarint32(in, &f->group);
}

bool GetMarks(std::string_view* in, VersionEdit::Marks* marks) {
  uint32_t count;
  if (!GetVarint32(in, &count) || count > in->size()) return false;
  for (uint32_t i = 0; i < count; ++i) {
    std::string name;
    uint64_t sequence;
    if (!GetString(in, &name) || !GetVarint64(in, &sequence)) return false;
    if (!marks->empty() && name <= marks->rbegin()->first) return false;
    marks->emplace_hint(marks->end(), std::move(name), sequence);
  }
  return true;
}

}  // namespace

void VersionEdit::EncodeTo(std::string* dst) const {
  if (next_file_number) {
    PutVarint32(dst, kNextFileNumber);
    PutVarint64(dst, *next_file_number);
  }
  if (last_sequence) {
    PutVarint32(dst, kLastSequence);
    PutVarint64(dst, *last_sequence);
  }
  if (comparator) {
    PutVarint32(dst, kComparator);
    PutLengthPrefixed(dst, *comparator);
  }
  for (const Tablet& t : tablets) {
    PutVarint32(dst, kTablet);
    PutVarint64(dst, t.tablet_id);
    PutLengthPrefixed(dst, t.descriptor);
  }
  for (uint64_t id : removed_tablets) {
    PutVarint32(dst, kRemovedTablet);
    PutVarint64(dst, id);
  }
  for (const NewFile& nf : new_files) {
    const FileMeta& f = nf.meta;
    const bool timed = f.max_timestamp != FileMeta::kUnknownTimestamp;
    PutVarint32(dst, timed ? kNewFileTimed : f.level == 0 ? kNewFile : kNewFileAtLevel);
    PutVarint64(dst, nf.tablet_id);
    PutVarint64(dst, f.number);
    PutVarint64(dst, f.size);
    PutLengthPrefixed(dst, f.smallest);
    PutLengthPrefixed(dst, f.largest);
    PutVarint64(dst, f.min_sequence);
    PutVarint64(dst, f.max_sequence);
    PutVarint64(dst, f.num_entries);
    PutVarint32(dst, f.group);
    if (timed || f.level != 0) PutVarint32(dst, f.level);
    if (timed) PutVarint64(dst, static_cast<uint64_t>(f.max_timestamp));
  }
  for (const DeletedFile& d : deleted_files) {
    PutVarint32(dst, kDeletedFile);
    PutVarint64(dst, d.tablet_id);
    PutVarint64(dst, d.file_number);
  }
  for (const Flushed& f : flushed) {
    PutVarint32(dst, kFlushed);
    PutVarint64(dst, f.tablet_id);
    PutVarint64(dst, f.flushed_sequence);
  }
  for (const DataState& d : data_states) {
    PutVarint32(dst, kDataState);
    PutVarint64(dst, d.tablet_id);
    PutVarint32(dst, d.state);
  }
  for (const DropMarks& d : drop_marks) {
    PutVarint32(dst, kDropMarks);
    PutVarint64(dst, d.tablet_id);
    PutVarint32(dst, static_cast<uint32_t>(d.marks.size()));
    for (const auto& [name, sequence] : d.marks) {
      PutLengthPrefixed(dst, name);
      PutVarint64(dst, sequence);
    }
  }
  for (const ReplicaEpoch& r : replica_epochs) {
    PutVarint32(dst, kReplicaEpoch);
    PutVarint64(dst, r.tablet_id);
    PutVarint64(dst, r.epoch);
  }
  for (const ReplayFrom& r : replay_from) {
    PutVarint32(dst, kReplayFrom);
    PutVarint64(dst, r.tablet_id);
    PutVarint64(dst, r.segment);
  }
  if (tablet_sequences) PutVarint32(dst, kTabletSequences);
}

Status VersionEdit::DecodeFrom(std::string_view src) {
  *this = VersionEdit();
  std::string_view in = src;
  while (!in.empty()) {
    const size_t field_offset = src.size() - in.size();
    uint32_t tag;
    bool ok = GetVarint32(&in, &tag);
    const char* field = "tag";
    if (ok) {
      switch (tag) {
        case kNextFileNumber: {
          field = "next_file_number";
          uint64_t v;
          ok = GetVarint64(&in, &v);
          if (ok) next_file_number = v;
          break;
        }
        case kLastSequence: {
          field = "last_sequence";
          uint64_t v;
          ok = GetVarint64(&in, &v);
          if (ok) last_sequence = v;
          break;
        }
        case kComparator: {
          field = "comparator";
          std::string v;
          ok = GetString(&in, &v);
          if (ok) comparator = std::move(v);
          break;
        }
        case kTablet: {
          field = "tablet";
          Tablet t;
          ok = GetVarint64(&in, &t.tablet_id) && GetString(&in, &t.descriptor);
          if (ok) tablets.push_back(std::move(t));
          break;
        }
        case kRemovedTablet: {
          field = "removed tablet";
          uint64_t id;
          ok = GetVarint64(&in, &id);
          if (ok) removed_tablets.push_back(id);
          break;
        }
        case kNewFile:
        case kNewFileAtLevel:
        case kNewFileTimed: {
          field = "new file";
          NewFile nf;
          uint64_t max_timestamp = 0;
          ok = GetVarint64(&in, &nf.tablet_id) && GetFileMeta(&in, &nf.meta) &&
               (tag == kNewFile || (GetVarint32(&in, &nf.meta.level) &&
                                    (tag == kNewFileTimed || nf.meta.level != 0))) &&
               (tag != kNewFileTimed || GetVarint64(&in, &max_timestamp));
          if (ok && tag == kNewFileTimed) {
            nf.meta.max_timestamp = static_cast<int64_t>(max_timestamp);
            // The unknown value is never written under this tag: it would not read back the same.
            ok = nf.meta.max_timestamp != FileMeta::kUnknownTimestamp;
          }
          if (ok) new_files.push_back(std::move(nf));
          break;
        }
        case kDeletedFile: {
          field = "deleted file";
          DeletedFile d;
          ok = GetVarint64(&in, &d.tablet_id) && GetVarint64(&in, &d.file_number);
          if (ok) deleted_files.push_back(d);
          break;
        }
        case kFlushed: {
          field = "flushed";
          Flushed f;
          ok = GetVarint64(&in, &f.tablet_id) && GetVarint64(&in, &f.flushed_sequence);
          if (ok) flushed.push_back(f);
          break;
        }
        case kDataState: {
          field = "data state";
          DataState d;
          ok = GetVarint64(&in, &d.tablet_id) && GetVarint32(&in, &d.state);
          if (ok) data_states.push_back(d);
          break;
        }
        case kDropMarks: {
          field = "drop marks";
          DropMarks d;
          ok = GetVarint64(&in, &d.tablet_id) && GetMarks(&in, &d.marks);
          if (ok) drop_marks.push_back(std::move(d));
          break;
        }
        case kTabletSequences:
          tablet_sequences = true;
          break;
        case kReplicaEpoch: {
          field = "replica epoch";
          ReplicaEpoch r;
          ok = GetVarint64(&in, &r.tablet_id) && GetVarint64(&in, &r.epoch);
          if (ok) replica_epochs.push_back(r);
          break;
        }
        case kReplayFrom: {
          field = "replay from";
          ReplayFrom r;
          ok = GetVarint64(&in, &r.tablet_id) && GetVarint64(&in, &r.segment);
          if (ok) replay_from.push_back(r);
          break;
        }
        default:
          return absl::DataLossError(
              StrCat("version edit: unknown tag ", tag, " at byte ", field_offset));
      }
    }
    if (!ok) {
      return absl::DataLossError(
          StrCat("version edit: malformed ", field, " field at byte ", field_offset));
    }
  }
  return Status();
}

std::string VersionEdit::DebugString() const {
  std::string s = "VersionEdit {";
  if (next_file_number) s += StrCat("\n  next_file_number: ", *next_file_number);
  if (last_sequence) s += StrCat("\n  last_sequence: ", *last_sequence);
  if (comparator) s += StrCat("\n  comparator: ", *comparator);
  for (const Tablet& t : tablets) {
    s += StrCat("\n  tablet: ", t.tablet_id, " descriptor '", absl::CHexEscape(t.descriptor), "'");
  }
  for (uint64_t id : removed_tablets) s += StrCat("\n  removed tablet: ", id);
  for (const NewFile& nf : new_files) {
    const FileMeta& f = nf.meta;
    s += StrCat("\n  new file: tablet ", nf.tablet_id, " #", f.number, " ", f.size, " bytes, seq [",
                f.min_sequence, ", ", f.max_sequence, "], ", f.num_entries, " entries, group ",
                f.group, ", level ", f.level, ", newest cell ts ",
                f.max_timestamp == FileMeta::kUnknownTimestamp  ? std::string("unknown")
                : f.max_timestamp == FileMeta::kNoCellTimestamp ? std::string("none")
                                                                : StrCat(f.max_timestamp),
                ", keys '", absl::CHexEscape(f.smallest), "' .. '", absl::CHexEscape(f.largest),
                "'");
  }
  for (const DeletedFile& d : deleted_files) {
    s += StrCat("\n  deleted file: tablet ", d.tablet_id, " #", d.file_number);
  }
  for (const Flushed& f : flushed) {
    s += StrCat("\n  flushed: tablet ", f.tablet_id, " through ", f.flushed_sequence);
  }
  for (const DataState& d : data_states) {
    s += StrCat("\n  data state: tablet ", d.tablet_id, " state ", d.state);
  }
  for (const DropMarks& d : drop_marks) {
    s += StrCat("\n  drop marks: tablet ", d.tablet_id);
    for (const auto& [name, sequence] : d.marks) s += StrCat(" ", name, "@", sequence);
  }
  for (const ReplicaEpoch& r : replica_epochs) {
    s += StrCat("\n  replica epoch: tablet ", r.tablet_id, " epoch ", r.epoch);
  }
  for (const ReplayFrom& r : replay_from) {
    s += StrCat("\n  replay from: tablet ", r.tablet_id, " segment ", r.segment);
  }
  if (tablet_sequences) s += "\n  tablet sequences";
  s += StrCat("\n}");
  return s;
}

}  // namespace tessera::storage
