// A minimal SimGrid (s4u, 3.32) driver for platforms written by
// `ibnet export --simgrid`: it starts point-to-point transfers at given
// times and prints when each completes. Used by the test
// tests/e2e/simgrid.rs to compare SimGrid with `loggopsim --network flow`.
//
// Build: g++ -O1 -o flows flows.cpp -lsimgrid   (Debian: libsimgrid-dev)
// Run:   ./flows PLATFORM.xml FLOWS.txt [--cfg=KEY:VALUE ...]
// FLOWS.txt: one flow per line, `SRC_HOST DST_HOST BYTES START_SECONDS`
// ('#' starts a comment). Output (stdout, CSV): flow,src,dst,bytes,start_s,end_s
// with one line per flow in input order, times in seconds (%.17g).
#include <simgrid/s4u.hpp>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

struct Flow {
  std::string src, dst;
  uint64_t bytes;
  double start;
  double end = -1;
};

int main(int argc, char** argv)
{
  sg4::Engine e(&argc, argv); // consumes the --cfg=... arguments
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s PLATFORM.xml FLOWS.txt [--cfg=KEY:VALUE ...]\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[2]);
  if (!in) {
    std::fprintf(stderr, "%s: cannot open %s\n", argv[0], argv[2]);
    return 2;
  }
  std::vector<Flow> flows;
  std::string line;
  for (int lineno = 1; std::getline(in, line); lineno++) {
    line = line.substr(0, line.find('#'));
    std::istringstream ls(line);
    Flow f;
    if (!(ls >> f.src)) // blank line
      continue;
    if (!(ls >> f.dst >> f.bytes >> f.start) || f.start < 0) {
      std::fprintf(stderr, "%s:%d: expected SRC DST BYTES START_SECONDS\n", argv[2], lineno);
      return 2;
    }
    flows.push_back(f);
  }
  e.load_platform(argv[1]);
  for (size_t i = 0; i < flows.size(); i++) {
    sg4::Host* src = e.host_by_name_or_null(flows[i].src);
    sg4::Host* dst = e.host_by_name_or_null(flows[i].dst);
    if (src == nullptr || dst == nullptr) {
      std::fprintf(stderr, "%s: flow %zu: no host %s in the platform\n", argv[0], i,
                   (src == nullptr ? flows[i].src : flows[i].dst).c_str());
      return 2;
    }
    Flow* f = &flows[i];
    sg4::Actor::create("flow" + std::to_string(i), src, [f, src, dst]() {
      sg4::this_actor::sleep_until(f->start);
      sg4::Comm::sendto(src, dst, f->bytes);
      f->end = sg4::Engine::get_clock();
    });
  }
  e.run();
  std::printf("flow,src,dst,bytes,start_s,end_s\n");
  for (size_t i = 0; i < flows.size(); i++)
    std::printf("%zu,%s,%s,%llu,%.17g,%.17g\n", i, flows[i].src.c_str(), flows[i].dst.c_str(),
                (unsigned long long)flows[i].bytes, flows[i].start, flows[i].end);
  return 0;
}
