// Text that came from outside the tool (a server's reply, a job's command line, a file) made safe for where it goes:
// a terminal, where an escape sequence would set the title, clear the screen or move the cursor and a newline would
// start a line that reads as the tool's own; and formats that must be valid UTF-8 (Prometheus' label values).
#pragma once
#include <string>
#include <string_view>

namespace fabricbench::results {

// `text` with every byte that a terminal acts on shown as text: C0 controls and DEL as \xNN (\n, \r, \t by name),
// C1 controls (U+0080-U+009F) and the bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069) as \uNNNN,
// and every byte that is not part of well-formed UTF-8 as \xNN. The result is valid UTF-8; printable text, including
// any other Unicode character, passes unchanged.
std::string printable(std::string_view text);

}  // namespace fabricbench::results
