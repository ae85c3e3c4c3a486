/* A static program that does nothing: the floor of any client's start (a dynamic /bin/true
 * pays the loader and libc's relocations as well), beside which bench-serve-gpu.sh sets
 * gpureap-status */
int main(void)
{
        return 0;
}
