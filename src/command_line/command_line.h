#pragma once
// The command-line parsing every tool shares: options bound to variables with po::value(&var).
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
#include <string>

namespace moe {

// Parses argv into the variables `options` is bound to. Returns false when --help was asked for,
// after printing `usage` (if any) and the options. Throws program_options' errors for bad flags.
// `values`, when given, receives which options were given (for "exactly one of" checks).
bool parse_command_line(int argc, char** argv, const boost::program_options::options_description& options,
                        const std::string& usage = "", boost::program_options::variables_map* values = nullptr);

}  // namespace moe
