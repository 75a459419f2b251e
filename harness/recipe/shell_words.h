// A shell command read into its simple commands and their words, as a POSIX shell (bash) would split them before
// running anything (docs/launch-check.md "How the command is read"): quotes and backslashes removed, line
// continuations joined, comments, here-document bodies and redirection targets left out. Nothing is expanded or run.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace recipebench {

/// One word of a simple command after quote removal.
struct ShellWord {
  std::string text;       ///< the argument as the program receives it when `expanded` is false
  size_t offset = 0;      ///< byte offset in the command where the word starts (its first quote or character)
  bool expanded = false;  ///< holds an expansion ($NAME, ${...}, $(...), `...`) outside single quotes: the
                          ///< program's argument is not known without running the shell
  bool quoted = false;    ///< held a quote or a backslash (so `text` is not the word as written)
};

/// One simple command: its words, the program first (after any NAME=value assignments, which are kept). Or the
/// elements of a bash array assignment, NAME=( ... ) (`array`): arguments with no program, which a later command
/// passes as `${NAME[@]}` (Megatron-LM's example scripts build their flags so).
struct ShellCommand {
  std::vector<ShellWord> words;
  bool array = false;
  std::string name;  ///< the array's NAME when `array`
};

/// The simple commands of `command` in order. Separators: a line end (outside quotes and continuations), ';', '&',
/// '|', '(' and ')'; after NAME=( the elements up to the matching ')' are one array command (line ends inside it
/// separate words only). A word that starts with '#' starts a comment to the line's end. '<', '>', '>>', '&>', '<&',
/// '>&', '<>', '>|' take the next word as their target, which is not an argument; `<<` and `<<-` take a delimiter
/// and the here-document's lines that follow the line (up to the delimiter's line) are data, skipped; `<<<` takes
/// its word as data. A quote left open runs to the command's end. Never throws.
std::vector<ShellCommand> shell_commands(const std::string& command);

/// The program a simple command runs: its first word that is not a NAME=value assignment nor a prefix that runs the
/// rest of the words (`env`, `exec`, `nohup`, `time`, `command`, `if`, `then`, `do`, `!`, `{`, ...); nullptr when
/// there is none.
const ShellWord* shell_program(const ShellCommand& c);

/// Whether `program` is a shell builtin or text utility whose arguments are data, never a launcher's flags:
/// echo, printf, cat, export, set, test, read, cd, grep, sed, ... (the list in shell_words.cpp).
bool is_data_command(const std::string& program);

}  // namespace recipebench
