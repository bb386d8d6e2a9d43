#include "command_line/command_line.h"

#include <boost/program_options.hpp>
#include <iostream>

namespace moe {

bool parse_command_line(int argc, char** argv, const boost::program_options::options_description& options,
                        const std::string& usage, boost::program_options::variables_map* values) {
  namespace po = boost::program_options;
  po::variables_map parsed;
  po::store(po::parse_command_line(argc, argv, options), parsed);
  if (parsed.count("help")) {
    if (!usage.empty()) std::cout << usage << "\n\n";
    std::cout << options << "\n";
    return false;
  }
  po::notify(parsed);
  if (values) *values = std::move(parsed);
  return true;
}

}  // namespace moe
