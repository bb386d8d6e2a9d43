#include "tokenizer/unicode_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "common/error.h"
#include "tokenizer/utf8.h"

namespace moe::tokenizer {

struct UnicodeRegex::Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Compiled() { pcre2_code_free(code); }
};

namespace {

// Per-thread match state, so that matching allocates nothing per call. The JIT stack grows to
// 8 MiB because patterns such as \s+(?!\S) backtrack over long runs of blanks.
struct MatchScratch {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  MatchScratch() { pcre2_jit_stack_assign(context, nullptr, jit_stack); }
  ~MatchScratch() {
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof buffer);
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

UnicodeRegex::UnicodeRegex(const std::string& pattern) : pattern_(pattern) {
  auto compiled = std::make_shared<Compiled>();
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  compiled->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                 PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
  if (!compiled->code)
    throw Error("cannot compile regex '" + pattern + "': " + pcre2_message(error_code) + " at offset " +
                std::to_string(error_offset));
  compiled->jit = pcre2_jit_compile(compiled->code, PCRE2_JIT_COMPLETE) == 0;
  compiled_ = std::move(compiled);
}

std::vector<std::pair<size_t, size_t>> UnicodeRegex::find_all(std::string_view text) const {
  thread_local MatchScratch scratch;
  std::vector<std::pair<size_t, size_t>> matches;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t search_from = 0;
  size_t previous_end = std::string_view::npos;
  while (search_from <= text.size()) {
    // The input was validated once by the tokenizer, so PCRE2 need not re-check it per call.
    const int rc = compiled_->jit ? pcre2_jit_match(compiled_->code, subject, text.size(), search_from,
                                                    PCRE2_NO_UTF_CHECK, scratch.data, scratch.context)
                                   : pcre2_match(compiled_->code, subject, text.size(), search_from,
                                                 PCRE2_NO_UTF_CHECK, scratch.data, scratch.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw Error("regex '" + pattern_ + "' failed: " + pcre2_message(rc));
    const PCRE2_SIZE* range = pcre2_get_ovector_pointer(scratch.data);
    const size_t start = range[0], end = range[1];
    if (start != end || start != previous_end) matches.emplace_back(start, end);
    previous_end = end;
    if (end > start) {
      search_from = end;
    } else if (end < text.size()) {
      search_from = end + scan_utf8_sequence(text.substr(end)).length;
    } else {
      break;
    }
  }
  return matches;
}

}  // namespace moe::tokenizer
