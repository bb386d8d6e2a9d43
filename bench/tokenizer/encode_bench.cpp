// Tokenizer throughput, single-threaded, on the real Qwen3 tokenizer: encode of ~1 MB of English
// prose and of CJK text (MB/s of input, word cache warm after the first pass), of words the cache
// has not seen, decode and streaming detokenization. MOE_TOKENIZER_PATH overrides the tokenizer directory.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "tokenizer/streaming.h"
#include "tokenizer/tokenizer.h"

namespace {

using moe::tokenizer::Tokenizer;

const Tokenizer& qwen3() {
  static const Tokenizer tokenizer = [] {
    const char* path = std::getenv("MOE_TOKENIZER_PATH");
    return Tokenizer::load(path ? std::string(path)
                                : (std::filesystem::path(__FILE__).parent_path() / "../../tests/data/qwen3-tokenizer")
                                      .string());
  }();
  return tokenizer;
}

// About `bytes` of text: the sentences in a seeded random order, repeated.
std::string corpus(const std::vector<std::string>& sentences, const std::string& separator, size_t bytes) {
  std::mt19937 rng(42);
  std::uniform_int_distribution<size_t> pick(0, sentences.size() - 1);
  std::string text;
  while (text.size() < bytes) text += sentences[pick(rng)] + separator;
  return text;
}

const std::string& english_prose() {
  static const std::string text = corpus(
      {"It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness.",
       "Call me Ishmael. Some years ago, never mind how long precisely, having little or no money in my purse, I "
       "thought I would sail about a little and see the watery part of the world.",
       "The Mixture-of-Experts layer routes every token to the two experts whose gates score highest.",
       "In 1969, Apollo 11 landed on the Moon; Neil Armstrong's first words were broadcast to 600 million people.",
       "\"Don't panic,\" she said, checking the 3.5-inch floppy disk for the third time that evening.",
       "Researchers reported that the model's accuracy rose from 71.2% to 84.9% after fine-tuning.",
       "Happy families are all alike; every unhappy family is unhappy in its own way.",
       "The quick brown fox jumps over the lazy dog while the committee debates the budget for next year."},
      " ", 1 << 20);
  return text;
}

const std::string& cjk_text() {
  static const std::string text = corpus(
      {"混合专家模型把每个词元路由到得分最高的两个专家。", "今天天气很好，我们去公园散步吧。",
       "自然语言处理是人工智能的一个重要分支，研究如何让计算机理解人类语言。",
       "吾輩は猫である。名前はまだ無い。", "東京の桜は三月の終わりに満開になります。",
       "대규모 언어 모델은 다양한 작업에서 뛰어난 성능을 보여 줍니다.", "学而时习之，不亦说乎？有朋自远方来，不亦乐乎？"},
      "\n", 1 << 20);
  return text;
}

// About 1 MB of made-up words (random syllables), different for every seed: nearly every word
// misses the cache, so encoding it measures the BPE merge loop itself.
std::string unseen_words(uint32_t seed) {
  static const char* kSyllables[] = {"ka", "lo", "mi", "ne", "tor", "vas", "qui", "zen", "bra", "fel",
                                     "ost", "ur", "pe", "shi", "dra", "gon", "wi", "xa", "yu", "ch"};
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> syllable(0, 19), count(3, 6);
  std::string text;
  while (text.size() < (1 << 20)) {
    text += ' ';
    for (int n = count(rng); n > 0; --n) text += kSyllables[syllable(rng)];
  }
  return text;
}

void encode_benchmark(benchmark::State& state, const std::string& text) {
  const Tokenizer& tokenizer = qwen3();
  size_t tokens = 0;
  for (auto _ : state) {
    const auto ids = tokenizer.encode(text);
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(tokens);
}

void BM_EncodeEnglishProse(benchmark::State& state) { encode_benchmark(state, english_prose()); }
void BM_EncodeCjk(benchmark::State& state) { encode_benchmark(state, cjk_text()); }
void BM_EncodeUnseenWords(benchmark::State& state) {
  const Tokenizer& tokenizer = qwen3();
  uint32_t seed = 0;
  int64_t bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const std::string text = unseen_words(++seed);
    state.ResumeTiming();
    benchmark::DoNotOptimize(tokenizer.encode(text).data());
    bytes += static_cast<int64_t>(text.size());
  }
  state.SetBytesProcessed(bytes);
}

void BM_Decode(benchmark::State& state) {
  const auto ids = qwen3().encode(english_prose());
  for (auto _ : state) benchmark::DoNotOptimize(qwen3().decode(ids).size());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * english_prose().size()));
}

void BM_StreamDetokenizeCjk(benchmark::State& state) {
  const auto ids = qwen3().encode(cjk_text());
  for (auto _ : state) {
    moe::tokenizer::IncrementalDetokenizer stream(qwen3(), false);
    size_t emitted = 0;
    for (int32_t id : ids) emitted += stream.push(id).size();
    benchmark::DoNotOptimize(emitted);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * cjk_text().size()));
}

BENCHMARK(BM_EncodeEnglishProse)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeCjk)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeUnseenWords)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Decode)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StreamDetokenizeCjk)->Unit(benchmark::kMillisecond);

}  // namespace
