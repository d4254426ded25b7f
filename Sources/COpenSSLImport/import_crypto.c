#include "COpenSSLImport.h"
