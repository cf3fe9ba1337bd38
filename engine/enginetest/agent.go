package enginetest

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// NeverRunAgent writes, under t's temporary directory, an agent binary
// for a workspace manager whose engine never starts a container: a bare
// ELF header, statically linked as the manager requires (no interpreter),
// with no code. It lets the tests of the packages above the engine make a
// manager whatever the test binary is, a cgo or -race build included,
// which the manager refuses as an agent because it is dynamically linked.
func NeverRunAgent(t testing.TB) string {
	t.Helper()
	h := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Ehsize: 64, Phentsize: 56, Shentsize: 64}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS], h.Ident[elf.EI_DATA], h.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	var b bytes.Buffer
	if err := binary.Write(&b, binary.LittleEndian, h); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "never-run-agent")
	if err := os.WriteFile(path, b.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
