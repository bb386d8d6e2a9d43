#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace moe::tokenizer {
namespace {

constexpr const char* kSupportedTypes = "NFC, NFD, NFKC, NFKD, Sequence (or null)";

// The utf8proc options of a normalization form, 0 for a name that is not one.
int utf8proc_options_for(const std::string& type) {
  constexpr int stable = UTF8PROC_STABLE;
  if (type == "NFC") return stable | UTF8PROC_COMPOSE;
  if (type == "NFD") return stable | UTF8PROC_DECOMPOSE;
  if (type == "NFKC") return stable | UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
  if (type == "NFKD") return stable | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
  return 0;
}

// Appends the forms of one normalizer value, flattening Sequences.
void collect_forms(const nlohmann::json& spec, const std::string& source, std::vector<int>& forms) {
  if (spec.is_null()) return;
  const std::string type = spec.is_object() ? spec.value("type", "") : "";
  if (type == "Sequence") {
    for (const auto& member : spec.value("normalizers", nlohmann::json::array())) collect_forms(member, source, forms);
    return;
  }
  const int options = utf8proc_options_for(type);
  if (options == 0)
    throw Error(source + ": unsupported normalizer type '" + type + "' (supported: " + kSupportedTypes + ")");
  forms.push_back(options);
}

}  // namespace

Normalizer Normalizer::from_json(const nlohmann::json& spec, const std::string& source) {
  Normalizer normalizer;
  collect_forms(spec, source, normalizer.forms_);
  return normalizer;
}

std::string Normalizer::normalize(std::string_view text) const {
  std::string result(text);
  // ASCII is invariant under every normalization form.
  const bool ascii = std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (ascii) return result;
  for (int options : forms_) {
    utf8proc_uint8_t* output = nullptr;
    const utf8proc_ssize_t length = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(result.data()),
                                                 static_cast<utf8proc_ssize_t>(result.size()), &output,
                                                 static_cast<utf8proc_option_t>(options));
    // The tokenizer validates its input first, so utf8proc cannot meet malformed UTF-8 here.
    if (length < 0) throw Error(std::string("unicode normalization failed: ") + utf8proc_errmsg(length));
    result.assign(reinterpret_cast<const char*>(output), static_cast<size_t>(length));
    std::free(output);
  }
  return result;
}

}  // namespace moe::tokenizer
