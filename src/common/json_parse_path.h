#pragma once
// Where a streaming JSON parse is: the key or index of the value being read in each open object or
// array, kept from the events of nlohmann's parser callback. When the parser stops (an error, a limit)
// it names the field it stopped in: "messages[1].content[0].n".
#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace moe {

class JsonParsePath {
 public:
  // Follows one event of the parser callback; `parsed` is read only for a key.
  template <class Json>
  void follow(nlohmann::detail::parse_event_t event, const Json& parsed) {
    using Event = nlohmann::detail::parse_event_t;
    switch (event) {
      case Event::object_start: open_.push_back({}); break;
      case Event::array_start: open_.push_back({.is_array = true, .key = {}, .index = 0}); break;
      case Event::key: open_.back().key = parsed.template get_ref<const typename Json::string_t&>(); break;
      case Event::object_end:
      case Event::array_end:
        open_.pop_back();
        value_done();
        break;
      case Event::value: value_done(); break;
    }
  }

  // How many objects and arrays are open.
  size_t depth() const { return open_.size(); }

  // The path after `prefix` (the name of the text parsed; empty for a request body). Past `levels`
  // levels it ends in "...", and keys are cut to `key_bytes`, so an error message stays short.
  std::string str(std::string_view prefix = {}, size_t levels = std::numeric_limits<size_t>::max(),
                  size_t key_bytes = std::numeric_limits<size_t>::max()) const;

 private:
  struct OpenContainer {
    bool is_array = false;
    std::string key;
    size_t index = 0;
  };

  void value_done() {
    if (!open_.empty() && open_.back().is_array) ++open_.back().index;
  }

  std::vector<OpenContainer> open_;
};

}  // namespace moe
