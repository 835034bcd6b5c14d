// Child processes for multi-process and crash tests: spawn a worker binary, describe how it
// ended, read the lines it wrote.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace strata::testing {

// Starts `program` with `args` (argv[0] is the program); its stdin is `stdin_fd` when >= 0.
// Returns the pid, or -1 when posix_spawn fails.
pid_t SpawnProcess(const std::string& program, const std::vector<std::string>& args,
                   int stdin_fd = -1);

// "exit N", "signal N" or "status N" for a waitpid status.
std::string DescribeWaitStatus(int status);

// The lines of a text file (none when it cannot be read).
std::vector<std::string> ReadLines(const std::string& path);

}  // namespace strata::testing
