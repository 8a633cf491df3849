/*
 * symbolize.c - return addresses to "function+0xoff" from ELF symbol tables.
 *
 * Each module's file is mapped read-only on first use, its build id checked
 * against the one recorded in the ring (a rebuilt library would give wrong
 * names), and its function symbols sorted for binary search. Every offset
 * read from the file is bounds-checked: a module file is input like any other.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recorder/symbolize.h"

struct sym {
    uint64_t addr;
    uint64_t size;
    const char *name; /* inside the mapping */
};

struct modsyms {
    int loaded; /* tried */
    void *map;
    size_t map_size;
    struct sym *syms; /* sorted by addr */
    size_t n;
};

struct cc__fr_symbolizer {
    const cc__fr_snapshot_t *s;
    struct modsyms *mods; /* one per module of the snapshot */
};

cc__fr_symbolizer_t *cc__fr_symbolizer_new(const cc__fr_snapshot_t *s)
{
    cc__fr_symbolizer_t *z = calloc(1, sizeof(*z));
    if (!z) return NULL;
    z->s = s;
    z->mods = calloc(s->nmodules + 1, sizeof(*z->mods));
    if (!z->mods) {
        free(z);
        return NULL;
    }
    return z;
}

void cc__fr_symbolizer_free(cc__fr_symbolizer_t *z)
{
    if (!z) return;
    for (uint32_t i = 0; i < z->s->nmodules; i++) {
        free(z->mods[i].syms);
        if (z->mods[i].map) munmap(z->mods[i].map, z->mods[i].map_size);
    }
    free(z->mods);
    free(z);
}

/* The section headers, if they lie inside the file. */
static const Elf64_Shdr *sections(const unsigned char *f, size_t size, unsigned *n)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(const void *)f;
    if (size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_shoff > size || eh->e_shnum > (size - eh->e_shoff) / sizeof(Elf64_Shdr) ||
        eh->e_shoff % 8)
        return NULL;
    *n = eh->e_shnum;
    return (const Elf64_Shdr *)(const void *)(f + eh->e_shoff);
}

/* Inside the file and aligned for `align`-byte reads (the structs are read
 * in place: a misaligned table in a damaged file must not be touched). */
static int in_file(const Elf64_Shdr *sh, size_t size, size_t align)
{
    return sh->sh_type != SHT_NOBITS && sh->sh_offset <= size &&
           sh->sh_size <= size - sh->sh_offset && sh->sh_offset % align == 0;
}

/* Does the file's GNU build id match the recorded one (or is either unknown)? */
static int same_build(const unsigned char *f, size_t size, const Elf64_Shdr *sh, unsigned n,
                      const cc__fr_module_t *m)
{
    for (unsigned i = 0; m->build_id_len && i < n; i++) {
        if (sh[i].sh_type != SHT_NOTE || !in_file(&sh[i], size, 4)) continue;
        const unsigned char *p = f + sh[i].sh_offset, *end = p + sh[i].sh_size;
        while (p + sizeof(Elf64_Nhdr) <= end) {
            const Elf64_Nhdr *nh = (const Elf64_Nhdr *)(const void *)p;
            size_t name = (nh->n_namesz + 3) & ~3u, desc = (nh->n_descsz + 3) & ~3u;
            const unsigned char *d = p + sizeof(*nh) + name;
            if (name > (size_t)(end - p) || desc > (size_t)(end - d)) break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4)
                return nh->n_descsz == m->build_id_len && !memcmp(d, m->build_id, m->build_id_len);
            p = d + desc;
        }
    }
    return 1;
}

static int by_addr(const void *a, const void *b)
{
    uint64_t x = ((const struct sym *)a)->addr, y = ((const struct sym *)b)->addr;
    return x < y ? -1 : x > y;
}

/* Collect the function symbols of one symbol table section. */
static void collect(struct modsyms *ms, const unsigned char *f, size_t size, const Elf64_Shdr *sh,
                    unsigned n, const Elf64_Shdr *tab)
{
    if (!in_file(tab, size, 8) || tab->sh_entsize != sizeof(Elf64_Sym) || tab->sh_link >= n) return;
    const Elf64_Shdr *str = &sh[tab->sh_link];
    if (!in_file(str, size, 1) || str->sh_size == 0) return;
    const char *strs = (const char *)f + str->sh_offset;
    if (strs[str->sh_size - 1] != '\0') return; /* names must end inside the table */
    size_t count = tab->sh_size / sizeof(Elf64_Sym);
    const Elf64_Sym *syms = (const Elf64_Sym *)(const void *)(f + tab->sh_offset);
    ms->syms = malloc((count + 1) * sizeof(*ms->syms));
    if (!ms->syms) return;
    for (size_t i = 0; i < count; i++) {
        if (ELF64_ST_TYPE(syms[i].st_info) != STT_FUNC || !syms[i].st_value ||
            syms[i].st_shndx == SHN_UNDEF || syms[i].st_name >= str->sh_size)
            continue;
        ms->syms[ms->n++] = (struct sym){syms[i].st_value, syms[i].st_size, strs + syms[i].st_name};
    }
    qsort(ms->syms, ms->n, sizeof(*ms->syms), by_addr);
}

static void load(struct modsyms *ms, const cc__fr_module_t *m)
{
    ms->loaded = 1; /* one try per module, found or not */
    /* The path comes from the ring, which may be hostile: never block on a
     * FIFO or a device (O_NONBLOCK), and read only regular files. */
    int fd = m->path[0] ? open(m->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) : -1;
    struct stat st;
    if (fd < 0) return;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
        close(fd);
        return;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return;
    ms->map = map;
    ms->map_size = (size_t)st.st_size;
    unsigned n = 0;
    const Elf64_Shdr *sh = sections(map, ms->map_size, &n);
    if (!sh || !same_build(map, ms->map_size, sh, n, m)) return;
    /* .symtab has the static functions too; stripped files keep .dynsym. */
    const Elf64_Shdr *tab = NULL;
    for (unsigned i = 0; i < n; i++)
        if (sh[i].sh_type == SHT_SYMTAB || (!tab && sh[i].sh_type == SHT_DYNSYM)) tab = &sh[i];
    if (tab) collect(ms, map, ms->map_size, sh, n, tab);
}

void cc__fr_symbolize(cc__fr_symbolizer_t *z, uint64_t addr, char *name, size_t cap,
                      const char **file)
{
    const cc__fr_snapshot_t *s = z->s;
    *file = "??";
    snprintf(name, cap, "0x%llx", (unsigned long long)addr);
    for (uint32_t i = 0; i < s->nmodules; i++) {
        const cc__fr_module_t *m = &s->modules[i];
        if (addr < m->start || addr >= m->end) continue;
        *file = m->path[0] ? m->path : "??";
        struct modsyms *ms = &z->mods[i];
        if (!ms->loaded) load(ms, m);
        /* Runtime address -> the file's virtual address, as in its symbols. */
        uint64_t va = addr - m->load_addr;
        size_t lo = 0, hi = ms->n; /* first symbol above va */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (ms->syms[mid].addr <= va)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0 &&
            va < ms->syms[lo - 1].addr + (ms->syms[lo - 1].size ? ms->syms[lo - 1].size : 1))
            snprintf(name, cap, "%s+0x%llx", ms->syms[lo - 1].name,
                     (unsigned long long)(va - ms->syms[lo - 1].addr));
        return;
    }
}
