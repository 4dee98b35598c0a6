// What a SASS memory instruction does, from its opcode text alone ("LDG.E.64", "STS.U8",
// "ATOMG.E.ADD.F32.FTZ.RN"): which memory space, which kind of access and how many bytes per
// thread. NVBit's mem_trace prints only the opcode, and Accel-Sim's traces print the opcode and a
// width derived from it the same way, so both importers classify instructions with this.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/types.h"

namespace uvmsim::trace::import {

enum class MemSpace : std::uint8_t {
  Global,    ///< LDG/STG/ATOMG/RED, generic LD/ST/ATOM (usually global), texture fetches
  Shared,    ///< LDS/STS/ATOMS/LDSM: on-chip, not UVM memory
  Local,     ///< LDL/STL: per-thread stack / spills
  Constant,  ///< LDC/ULDC
  None,      ///< not a memory instruction
};

struct SassAccess {
  MemSpace space = MemSpace::None;
  AccessKind kind = AccessKind::Read;
  std::uint32_t bytes = 4;  ///< per thread: from a width token (64, 128, U8, S16, ...), else 4
};

SassAccess classify_sass(std::string_view opcode);

}  // namespace uvmsim::trace::import
