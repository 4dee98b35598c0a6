// Error messages quote user input (a CSV cell, a relation, a file name, a --set value), which may
// hold line breaks or other control characters. The CLI prints every error as one line (scripts
// and the sweep backends read stderr line by line): this is how it makes sure.
#pragma once

#include <string>
#include <string_view>

namespace uvmsim {

/// `text` with every control character (below 0x20, and 0x7f) shown as '?'.
std::string one_line(std::string_view text);

}  // namespace uvmsim
