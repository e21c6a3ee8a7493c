// bench/instant_bot.c behind a C++ front, linked against the shared libstdc++: what a
// compiled C++ engine needs from the system (the C++ runtime, the dynamic linker and its
// cache) must be there in a sandbox.
// Build: cc -O2 -Dmain=instant_main -c bench/instant_bot.c && c++ -o cxx_bot
//        tests/engines/cxx_bot.cpp instant_bot.o
#include <iostream>
#include <string>
#include <vector>

extern "C" int instant_main(int argc, char **argv);

int main(int argc, char **argv) {
    std::vector<std::string> words(argv, argv + argc);
    std::cerr << "cxx_bot: started with " << words.size() << " words" << std::endl;
    return instant_main(argc, argv);
}
