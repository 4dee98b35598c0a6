MemcpyHtoD,0x00007f3a00000000,512
MemcpyHtoD,0x00007f3a00200000,512
kernel-1.traceg
kernel-2.traceg
