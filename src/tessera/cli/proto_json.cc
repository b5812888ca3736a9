#include "tessera/cli/proto_json.h"

#include <string>

#include "absl/strings/escaping.h"

namespace tessera::cli {

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// One value of `field`: the single one, or element `index` of a repeated field (index >= 0).
nlohmann::json Value(const Message& m, const FieldDescriptor* f, int index) {
  const Reflection* r = m.GetReflection();
  const bool rep = index >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f);
    case FieldDescriptor::CPPTYPE_INT64:
      return rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f);
    case FieldDescriptor::CPPTYPE_UINT32:
      return rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f);
    case FieldDescriptor::CPPTYPE_UINT64:
      return rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f);
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f);
    case FieldDescriptor::CPPTYPE_FLOAT:
      return rep ? r->GetRepeatedFloat(m, f, index) : r->GetFloat(m, f);
    case FieldDescriptor::CPPTYPE_BOOL:
      return rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f);
    case FieldDescriptor::CPPTYPE_ENUM: {
      const auto* e = rep ? r->GetRepeatedEnum(m, f, index) : r->GetEnum(m, f);
      return e->name();
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string s = rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f);
      if (f->type() == FieldDescriptor::TYPE_BYTES) return absl::Base64Escape(s);
      return s;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return ProtoToJson(rep ? r->GetRepeatedMessage(m, f, index) : r->GetMessage(m, f));
  }
  return nullptr;
}

}  // namespace

nlohmann::json ProtoToJson(const Message& message) {
  nlohmann::json out = nlohmann::json::object();
  const auto* descriptor = message.GetDescriptor();
  const Reflection* r = message.GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* f = descriptor->field(i);
    if (f->is_map()) {
      nlohmann::json map = nlohmann::json::object();
      const FieldDescriptor* key = f->message_type()->map_key();
      const FieldDescriptor* value = f->message_type()->map_value();
      for (int j = 0; j < r->FieldSize(message, f); ++j) {
        const Message& entry = r->GetRepeatedMessage(message, f, j);
        nlohmann::json k = Value(entry, key, -1);
        map[k.is_string() ? k.get<std::string>() : k.dump()] = Value(entry, value, -1);
      }
      out[f->name()] = std::move(map);
    } else if (f->is_repeated()) {
      nlohmann::json list = nlohmann::json::array();
      for (int j = 0; j < r->FieldSize(message, f); ++j) list.push_back(Value(message, f, j));
      out[f->name()] = std::move(list);
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (r->HasField(message, f)) out[f->name()] = Value(message, f, -1);
    } else if (f->has_presence() && !r->HasField(message, f) && f->containing_oneof() != nullptr) {
      continue;  // an unset member of a oneof is not a field with a default
    } else {
      out[f->name()] = Value(message, f, -1);
    }
  }
  return out;
}

}  // namespace tessera::cli
