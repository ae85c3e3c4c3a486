/* Replays every file of a fuzz corpus through the fuzz target (without libFuzzer), so the
 * sanitizer build of the test suite runs the corpus on every CI run. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
        if (argc != 2) {
                fprintf(stderr, "usage: fuzz-replay CORPUS_DIR\n");
                return 2;
        }
        DIR *d = opendir(argv[1]);
        if (!d) {
                perror(argv[1]);
                return 1;
        }
        unsigned n = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                char path[4096];
                snprintf(path, sizeof(path), "%s/%s", argv[1], de->d_name);
                FILE *f = fopen(path, "rb");
                if (!f)
                        continue;
                static uint8_t buf[1 << 16];
                size_t len = fread(buf, 1, sizeof(buf), f);
                fclose(f);
                /* a copy of exactly len bytes, so ASan sees any read past the end */
                uint8_t *copy = malloc(len ? len : 1);
                if (!copy)
                        return 1;
                memcpy(copy, buf, len);
                LLVMFuzzerTestOneInput(copy, len);
                free(copy);
                n++;
        }
        closedir(d);
        printf("replayed %u inputs\n", n);
        return n > 0 ? 0 : 1;
}
